import { ChainMembership } from '../domain/audit/chained-events.js';
import {
  HistoryVerification,
  type ChainSeed,
  type ObservedEvent,
  type StoredLink,
  type VerificationReport,
} from '../domain/audit/verification.js';
import type { EventStore, ReadAllOptions, RecordedEvent } from '../eventstore/port.js';
import type { Pool } from '../infra/postgres/pool.js';
import { sha256Hex } from '../infra/sha256.js';
import { chainedFields } from '../projections/audit-chain/projector.js';
import { chainFrontier, chainSeedsBefore, linkPages, recordedWindow, deviceProjects } from './chain-links.js';
import { chainedEventPages } from './chained-event-pages.js';
import { PageCursor } from './page-cursor.js';
import { auditPublicKeys, signatureCheck, type AuditPublicKey } from './signing-keys.js';
import { storedCheckpoints } from './stored-checkpoints.js';

interface VerifyOptions {
  readonly projectId?: string;
  /** ISO instants: the history recorded from `from` (inclusive) to `to` (exclusive). */
  readonly from?: string;
  readonly to?: string;
  /** The keys an auditor recorded; without them, the audit keys in the database. */
  readonly trustedKeys?: readonly AuditPublicKey[];
  /** Called every PROGRESS_EVERY events with how many were checked so far. */
  readonly onProgress?: (eventsSoFar: number) => void;
}

const PAGE = 10_000;
const PROGRESS_EVERY = 50_000;

/** Where the store's events are read from, and up to where (the links' window; the unchained tail by time). */
interface EventRange {
  readonly start: Pick<ReadAllOptions, 'from' | 'after'>;
  /** Inclusive: the last chained position of the window. */
  readonly upTo: string | undefined;
  readonly frontier: string | undefined;
  readonly to: string | undefined;
}

/**
 * `devcloud audit verify`: the chains computed again from the events the store holds, held against the
 * stored links (which pinpoint the first position that differs) and the signed checkpoints (which give
 * the verdict). The events and the links are read side by side in pages and merged in global order.
 */
export async function verifyStoredHistory(
  deps: { readonly store: EventStore; readonly pool: Pool },
  options: VerifyOptions = {},
): Promise<VerificationReport> {
  const { store, pool } = deps;
  const { projectId } = options;
  const frontier = await chainFrontier(pool);
  const keys = options.trustedKeys ?? (await auditPublicKeys(pool));
  const checkpoints = await storedCheckpoints(store, projectId);
  let seeds = new Map<string, ChainSeed>();
  let links = new PageCursor<StoredLink>(async () => undefined);
  // A window that starts late needs the devices registered before it (ChainMembership).
  const devices =
    options.from !== undefined && frontier !== undefined ? await deviceProjects(pool) : undefined;
  const membership = new ChainMembership(devices);
  let range: EventRange = { start: {}, upTo: undefined, frontier, to: options.to };
  if (frontier !== undefined) {
    const window = await recordedWindow(pool, options, { upTo: frontier, projectId });
    const { start } = window;
    range = { ...range, upTo: window.last };
    if (start !== 'after_chain') {
      const from = start === 'beginning' ? undefined : start.at;
      links = new PageCursor(linkPages(pool, { from, upTo: window.last, projectId }, PAGE));
      if (from !== undefined) range = { ...range, start: { from } };
    } else {
      // No link recorded from `from` on: only events past the chain's end can lie in the window.
      range = { ...range, start: { after: frontier } };
    }
    if (start !== 'beginning') {
      seeds = await chainSeedsBefore(pool, start === 'after_chain' ? undefined : start.at, {
        upTo: frontier,
        projectId,
      });
    }
  }
  const verification = new HistoryVerification(sha256Hex, signatureCheck(keys), checkpoints, seeds);
  const compare = (a: string, b: string) => store.comparePositions(a, b);
  const events = new PageCursor(eventPages(store, range, compare));
  const observed = (event: RecordedEvent, link: StoredLink | undefined): ObservedEvent => ({
    ...chainedFields(event),
    // The link at the event's position names its chain; the data is parsed only where none does (or to
    // learn a registration). A changed event that moved to another chain still fails: its digest differs.
    projectId:
      link !== undefined && !ChainMembership.learnsFrom(event.type)
        ? link.projectId
        : (membership.projectOf(event.type, event.data) ?? ''),
  });
  let count = 0;
  for (;;) {
    const event = events.peek() ?? (await events.current());
    const link = links.peek() ?? (await links.current());
    if (!event && !link) break;
    const order = !event ? 1 : !link ? -1 : compare(event.position, link.position);
    if (order > 0) {
      verification.observe(undefined, link);
      links.advance();
      continue;
    }
    events.advance();
    if (order === 0) {
      links.advance();
      verification.observe(observed(event!, link), link);
    } else {
      const unlinked = observed(event!, undefined);
      // An event of another chain, or of none, where the chain holds no link: not this verification's.
      if (unlinked.projectId === '' || (projectId !== undefined && unlinked.projectId !== projectId))
        continue;
      verification.observe(
        unlinked,
        undefined,
        frontier === undefined || compare(unlinked.position, frontier) > 0,
      );
    }
    if (++count % PROGRESS_EVERY === 0) options.onProgress?.(count);
  }
  return verification.finish(options.to === undefined);
}

/** The chained events of the range in global order, a page at each call. */
function eventPages(
  store: EventStore,
  range: EventRange,
  compare: (a: string, b: string) => number,
): () => Promise<readonly RecordedEvent[] | undefined> {
  const read = chainedEventPages(store, range.start);
  let done = false;
  // Past the window's last chained position, the events before the chain's end are outside the window.
  const beyond = (position: string, recordedAt: Date) =>
    range.to !== undefined &&
    (range.frontier !== undefined && compare(position, range.frontier) <= 0
      ? range.upTo === undefined || range.upTo === '' || compare(position, range.upTo) > 0
      : recordedAt.toISOString() >= range.to);
  return async () => {
    const events = done ? undefined : await read();
    if (events === undefined || range.to === undefined) return events;
    const end = events.findIndex((event) => beyond(event.position, event.recordedAt));
    if (end < 0) return events;
    done = true;
    return events.slice(0, end);
  };
}
