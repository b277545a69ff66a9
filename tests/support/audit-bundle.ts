import { BUNDLE_FORMAT } from '../../src/audit/bundle.js';
import { auditPublicKeys } from '../../src/audit/signing-keys.js';
import { CHAIN_FORMAT, genesisLink } from '../../src/domain/audit/chain.js';
import { CHAINED_EVENT_TYPES, ChainMembership } from '../../src/domain/audit/chained-events.js';
import { checkpointStream, type AuditCheckpoint } from '../../src/domain/audit/checkpoint-events.js';
import type { EventStore, RecordedEvent } from '../../src/eventstore/port.js';
import type { Pool } from '../../src/infra/postgres/pool.js';
import { sha256Hex } from '../../src/infra/sha256.js';

const LINKS = `
  SELECT position, sequence, digest, link FROM audit_chain_links WHERE project_id = $1 ORDER BY sequence`;

/**
 * A bundle of one project's chained history as docs/audit.md describes it, written from the store, the
 * chain's links, the checkpoints and the audit keys: the tests' own writer of the format, which the
 * verifiers read. `afterCheckpoint`: start after that checkpoint's count (as an export with --from does).
 * Ends at the last checkpoint, as an export does.
 */
export async function bundleLines(
  deps: { store: EventStore; pool: Pool },
  projectId: string,
  options: { afterCheckpoint?: number } = {},
): Promise<string[]> {
  const checkpoints = (await deps.store.readStream(checkpointStream(projectId))).map((e) => ({
    eventPosition: e.position,
    checkpoint: e.data as AuditCheckpoint,
  }));
  const links = (
    await deps.pool.query<{ position: string; sequence: string; digest: string; link: string }>(LINKS, [
      projectId,
    ])
  ).rows.map((r) => ({ ...r, sequence: Number(r.sequence) }));
  const events = new Map((await chainedEvents(deps.store, projectId)).map((e) => [e.position, e]));
  const startAfter =
    options.afterCheckpoint === undefined ? 0 : checkpoints[options.afterCheckpoint]!.checkpoint.count;
  const end = checkpoints.at(-1)?.checkpoint.count ?? 0;
  const startLink = links[startAfter - 1];
  const header = {
    format: BUNDLE_FORMAT,
    chainFormat: CHAIN_FORMAT,
    projectId,
    exportedAt: new Date().toISOString(),
    from: null,
    to: null,
    start: startLink
      ? { count: startAfter, link: startLink.link, position: startLink.position }
      : { count: 0, link: genesisLink(sha256Hex, projectId), position: null },
  };
  const covered = checkpoints.filter((c) => c.checkpoint.count > startAfter && c.checkpoint.count <= end);
  const keyIds = new Set(covered.map((c) => c.checkpoint.keyId));
  const keys = (await auditPublicKeys(deps.pool)).filter((k) => keyIds.has(k.keyId));
  return [
    header,
    ...keys.map((k) => ({ kind: 'key', ...k })),
    ...links
      .filter((l) => l.sequence > startAfter && l.sequence <= end)
      .map((l) => {
        const event = events.get(l.position)!;
        return {
          kind: 'event',
          sequence: l.sequence,
          position: l.position,
          type: event.type,
          stream: event.streamName,
          recordedAt: event.recordedAt.toISOString(),
          data: event.dataText!,
          digest: l.digest,
          link: l.link,
        };
      }),
    ...covered.map((c) => ({ kind: 'checkpoint', ...c })),
  ].map((line) => JSON.stringify(line));
}

async function chainedEvents(store: EventStore, projectId: string): Promise<RecordedEvent[]> {
  const found: RecordedEvent[] = [];
  const membership = new ChainMembership();
  let after: string | undefined;
  for (;;) {
    const page = await store.readAll({
      after,
      maxCount: 1000,
      eventTypes: CHAINED_EVENT_TYPES,
      dataAsStored: true,
    });
    found.push(...page.events.filter((e) => membership.projectOf(e.type, e.data) === projectId));
    if (page.atEnd || page.lastPosition === undefined) return found;
    after = page.lastPosition;
  }
}
