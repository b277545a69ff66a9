import { CHAIN_FORMAT, genesisLink } from '../domain/audit/chain.js';
import type { ObservedCheckpoint, StoredLink } from '../domain/audit/verification.js';
import type { EventStore, RecordedEvent } from '../eventstore/port.js';
import type { Pool } from '../infra/postgres/pool.js';
import { sha256Hex } from '../infra/sha256.js';
import { chainedFields } from '../projections/audit-chain/projector.js';
import {
  chainFrontier,
  chainLengthUpTo,
  chainSeedsBefore,
  projectLinkPages,
  recordedWindow,
} from './chain-links.js';
import { chainedEventPages } from './chained-event-pages.js';
import { PageCursor } from './page-cursor.js';
import { auditPublicKeys } from './signing-keys.js';
import { projectCheckpoints } from './stored-checkpoints.js';

const BUNDLE_FORMAT = 'devcloud-audit-bundle/1';

const PAGE = 10_000;

interface ExportOptions {
  readonly projectId: string;
  /** ISO instants: the history recorded from `from` (inclusive) to `to` (exclusive). */
  readonly from?: string;
  readonly to?: string;
}

export interface ExportSummary {
  readonly events: number;
  readonly checkpoints: number;
  readonly keys: number;
  /** The chain's state before the first exported event, and the last checkpoint exported. */
  readonly start: { count: number; link: string; position: string | null };
  readonly end: { sequence: number; count: number; position: string };
}

/** Nothing signed to export, or a history that no longer matches its chain (verify names where). */
export class AuditExportRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AuditExportRefused';
  }
}

/**
 * `devcloud audit export`: a project's chained events, their links, the checkpoints that sign them and the
 * keys that signed those, as the self-contained bundle (docs/audit.md, "The export bundle") a third party
 * verifies offline. Only events a checkpoint covers are exported: it ends at the last checkpoint within the
 * window, so every byte of it is vouched for by a signature.
 */
export async function exportBundle(
  deps: { readonly store: EventStore; readonly pool: Pool; readonly now?: Date },
  options: ExportOptions,
  write: (line: string) => void | Promise<void>,
): Promise<ExportSummary> {
  const { store, pool } = deps;
  const { projectId } = options;
  const frontier = await chainFrontier(pool);
  if (frontier === undefined) throw new AuditExportRefused('nothing is chained yet');
  const window = await recordedWindow(pool, options, { upTo: frontier, projectId });
  if (window.start === 'after_chain' || window.last === '') {
    throw new AuditExportRefused(`project ${projectId}: no chained event was recorded in the window`);
  }
  const from = window.start === 'beginning' ? undefined : window.start.at;
  const seed =
    from === undefined
      ? undefined
      : (await chainSeedsBefore(pool, from, { upTo: frontier, projectId })).get(projectId);
  const start = seed ?? { count: 0, link: genesisLink(sha256Hex, projectId), position: null };
  const length = await chainLengthUpTo(pool, projectId, window.last);
  const checkpoints = (await projectCheckpoints(store, projectId)).filter(
    (c) => c.checkpoint.count > start.count && c.checkpoint.count <= length,
  );
  const last = checkpoints.at(-1)?.checkpoint;
  if (!last)
    throw new AuditExportRefused(`project ${projectId}: no checkpoint signs an event of the window yet`);

  const signers = new Set(checkpoints.map((c) => c.checkpoint.keyId));
  const keys = (await auditPublicKeys(pool)).filter((k) => signers.has(k.keyId));
  await write(
    JSON.stringify({
      format: BUNDLE_FORMAT,
      chainFormat: CHAIN_FORMAT,
      projectId,
      exportedAt: (deps.now ?? new Date()).toISOString(),
      from: options.from ?? null,
      to: options.to ?? null,
      start,
    }),
  );
  for (const key of keys) await write(JSON.stringify({ kind: 'key', ...key }));
  const events = await writeEvents(deps, projectId, { after: start.count, upTo: last.count }, write);
  for (const c of checkpoints) await write(checkpointLine(c));
  return {
    events,
    checkpoints: checkpoints.length,
    keys: keys.length,
    start,
    end: { sequence: last.sequence, count: last.count, position: last.position },
  };
}

/** The project's events with sequence in (after, upTo], each beside its stored link, in chain order. */
async function writeEvents(
  deps: { readonly store: EventStore; readonly pool: Pool },
  projectId: string,
  range: { after: number; upTo: number },
  write: (line: string) => void | Promise<void>,
): Promise<number> {
  const links = new PageCursor(projectLinkPages(deps.pool, projectId, range, PAGE));
  const first = await links.current();
  if (!first)
    throw new AuditExportRefused(`project ${projectId}: the chain holds no link #${range.after + 1}`);
  const events = new PageCursor(chainedEventPages(deps.store, { from: first.position }));
  const compare = (a: string, b: string) => deps.store.comparePositions(a, b);
  let written = 0;
  for (;;) {
    const link = links.peek() ?? (await links.current());
    if (!link) return written;
    let event = events.peek() ?? (await events.current());
    // Other chains' events, and any the chain does not hold, lie between this chain's links.
    while (event && compare(event.position, link.position) < 0) {
      events.advance();
      event = events.peek() ?? (await events.current());
    }
    if (!event || event.position !== link.position) {
      throw new AuditExportRefused(
        `project ${projectId}: event #${link.sequence} of the chain, at ${link.position}, is no longer in the ` +
          'store; run devcloud audit verify',
      );
    }
    await write(eventLine(event, link));
    written++;
    links.advance();
    events.advance();
  }
}

function eventLine(event: RecordedEvent, link: StoredLink): string {
  const fields = chainedFields(event);
  return JSON.stringify({
    kind: 'event',
    sequence: link.sequence,
    position: fields.position,
    type: fields.type,
    stream: fields.streamName,
    recordedAt: fields.recordedAt,
    data: fields.data,
    digest: link.digest,
    link: link.link,
  });
}

function checkpointLine(observed: ObservedCheckpoint): string {
  return JSON.stringify({
    kind: 'checkpoint',
    eventPosition: observed.eventPosition,
    checkpoint: observed.checkpoint,
  });
}
