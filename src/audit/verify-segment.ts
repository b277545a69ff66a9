import { ChainMembership } from '../domain/audit/chained-events.js';
import {
  HistoryVerification,
  type ChainSeed,
  type ObservedCheckpoint,
  type ObservedEvent,
  type StoredLink,
  type VerificationOutcome,
} from '../domain/audit/verification.js';
import type { EventStore, ReadAllOptions, RecordedEvent } from '../eventstore/port.js';
import type { Pool } from '../infra/postgres/pool.js';
import { sha256Hex } from '../infra/sha256.js';
import { chainedFields } from '../projections/audit-chain/projector.js';
import { linkPages, type LinkRange } from './chain-links.js';
import { chainedEventPages } from './chained-event-pages.js';
import { PageCursor } from './page-cursor.js';
import { signatureCheck, type AuditPublicKey } from './signing-keys.js';

const PAGE = 10_000;
const PROGRESS_EVERY = 50_000;

/** Where a segment reads the store's events from, and up to where. */
export interface EventRange {
  readonly start: Pick<ReadAllOptions, 'from' | 'after'>;
  /** Exclusive: where the next segment starts (every segment but the last). */
  readonly before?: string;
  /** Inclusive: the last chained position of the window. */
  readonly upTo: string | undefined;
  readonly frontier: string | undefined;
  /** ISO instant: the window's end by recorded time (the unchained tail is cut by time). */
  readonly to: string | undefined;
}

/** One stretch of the global order to verify: plain data, so a worker thread can be handed it. */
export interface VerificationSegment {
  readonly projectId?: string;
  readonly events: EventRange;
  /** The stored links of the stretch; none where the window lies past the chain's end. */
  readonly links?: LinkRange;
  readonly seeds: ReadonlyMap<string, ChainSeed>;
  /** Devices registered before the stretch, with their projects (ChainMembership); none from the start. */
  readonly devices?: ReadonlyMap<string, string>;
  /** The last stretch of a verification without --to: a checkpoint past its end means events were removed. */
  readonly complete: boolean;
}

/** What every segment of a verification holds against: the keys trusted and every checkpoint recorded. */
export interface SegmentEvidence {
  readonly keys: readonly AuditPublicKey[];
  readonly checkpoints: readonly ObservedCheckpoint[];
}

/**
 * A segment verified: the chains computed again from the events the store holds, held against the stored
 * links (which pinpoint the first position that differs) and the signed checkpoints. The events and the
 * links are read side by side in pages and merged in global order. `onProgress` is told every
 * PROGRESS_EVERY events how many more were checked.
 */
export async function verifySegment(
  deps: { readonly store: EventStore; readonly pool: Pool },
  segment: VerificationSegment,
  evidence: SegmentEvidence,
  onProgress?: (events: number) => void,
): Promise<VerificationOutcome> {
  const { store, pool } = deps;
  const { projectId, events: range } = segment;
  const verification = new HistoryVerification(
    sha256Hex,
    signatureCheck(evidence.keys),
    evidence.checkpoints,
    segment.seeds,
  );
  const membership = new ChainMembership(segment.devices);
  const compare = (a: string, b: string) => store.comparePositions(a, b);
  const links = new PageCursor<StoredLink>(
    segment.links ? linkPages(pool, segment.links, PAGE) : async () => undefined,
  );
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
        range.frontier === undefined || compare(unlinked.position, range.frontier) > 0,
      );
    }
    if (++count % PROGRESS_EVERY === 0) onProgress?.(PROGRESS_EVERY);
  }
  return verification.outcome(segment.complete);
}

/** The chained events of the range in global order, a page at each call. */
function eventPages(
  store: EventStore,
  range: EventRange,
  compare: (a: string, b: string) => number,
): () => Promise<readonly RecordedEvent[] | undefined> {
  const read = chainedEventPages(store, range.start);
  let done = false;
  const { before, to } = range;
  // Past the window's last chained position, the events before the chain's end are outside the window.
  const beyond = (position: string, recordedAt: Date) =>
    before !== undefined
      ? compare(position, before) >= 0
      : to !== undefined &&
        (range.frontier !== undefined && compare(position, range.frontier) <= 0
          ? range.upTo === undefined || range.upTo === '' || compare(position, range.upTo) > 0
          : recordedAt.toISOString() >= to);
  return async () => {
    const events = done ? undefined : await read();
    if (events === undefined || (to === undefined && before === undefined)) return events;
    const end = events.findIndex((event) => beyond(event.position, event.recordedAt));
    if (end < 0) return events;
    done = true;
    return events.slice(0, end);
  };
}
