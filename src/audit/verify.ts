import { availableParallelism } from 'node:os';
import { joinSegments } from '../domain/audit/segments.js';
import {
  verificationReport,
  type ChainSeed,
  type ObservedCheckpoint,
  type VerificationReport,
} from '../domain/audit/verification.js';
import type { EventStore } from '../eventstore/port.js';
import type { Pool } from '../infra/postgres/pool.js';
import {
  chainFrontier,
  chainSeedsBefore,
  deviceProjects,
  linkPositions,
  recordedWindow,
  splitPositions,
} from './chain-links.js';
import { verifySegmentsAtOnce, type StoreConnection } from './segment-threads.js';
import { auditPublicKeys, type AuditPublicKey } from './signing-keys.js';
import { storedCheckpoints } from './stored-checkpoints.js';
import { verifySegment, type EventRange, type VerificationSegment } from './verify-segment.js';

interface VerifyOptions {
  readonly projectId?: string;
  /** ISO instants: the history recorded from `from` (inclusive) to `to` (exclusive). */
  readonly from?: string;
  readonly to?: string;
  /** The keys an auditor recorded; without them, the audit keys in the database. */
  readonly trustedKeys?: readonly AuditPublicKey[];
  /** Called as events are checked with how many were checked so far. */
  readonly onProgress?: (eventsSoFar: number) => void;
  /**
   * Segments verified at once, one a thread (more than one needs the `connection` their threads open).
   * By default one a core, for histories of MINIMUM_LINKS_A_SEGMENT links a core or more.
   */
  readonly threads?: number;
}

/** Below this many links a segment, a thread of its own costs more than it saves (start-up, connections). */
const MINIMUM_LINKS_A_SEGMENT = 100_000;

/**
 * `devcloud audit verify`: the chains computed again from the events the store holds, held against the
 * stored links and the signed checkpoints (verify-segment.ts). A long history is cut by position into
 * segments verified at once, one a thread, each taken up from the stored links at its start; joined, they
 * report what one pass would (domain/audit/segments.ts).
 */
export async function verifyStoredHistory(
  deps: { readonly store: EventStore; readonly pool: Pool; readonly connection?: StoreConnection },
  options: VerifyOptions = {},
): Promise<VerificationReport & { readonly threads: number }> {
  const { store, pool, connection } = deps;
  const { projectId } = options;
  const frontier = await chainFrontier(pool);
  const evidence = {
    keys: options.trustedKeys ?? (await auditPublicKeys(pool)),
    checkpoints: await storedCheckpoints(store, projectId),
  };
  let whole: VerificationSegment = {
    projectId,
    events: { start: {}, upTo: undefined, frontier, to: options.to },
    seeds: new Map(),
    complete: options.to === undefined,
  };
  if (frontier !== undefined) {
    const window = await recordedWindow(pool, options, { upTo: frontier, projectId });
    const { start } = window;
    whole = { ...whole, events: { ...whole.events, upTo: window.last } };
    if (start !== 'after_chain') {
      const from = start === 'beginning' ? undefined : start.at;
      whole = {
        ...whole,
        links: { from, upTo: window.last, projectId },
        events: { ...whole.events, start: from === undefined ? {} : { from } },
      };
    } else {
      // No link recorded from `from` on: only events past the chain's end can lie in the window.
      whole = { ...whole, events: { ...whole.events, start: { after: frontier } } };
    }
    if (start !== 'beginning') {
      // A window that starts late needs the devices registered before it (ChainMembership).
      whole = {
        ...whole,
        devices: options.from !== undefined ? await deviceProjects(pool) : undefined,
        seeds: await chainSeedsBefore(pool, start === 'after_chain' ? undefined : start.at, {
          upTo: frontier,
          projectId,
        }),
      };
    }
  }
  let checked = 0;
  const progress = (events: number) => options.onProgress?.((checked += events));
  const threads = connection === undefined ? 1 : (options.threads ?? availableParallelism());
  const cuts =
    threads > 1 && whole.links !== undefined && whole.links.upTo !== ''
      ? await splitPositions(
          pool,
          whole.links,
          threads,
          options.threads === undefined ? MINIMUM_LINKS_A_SEGMENT : 1,
        )
      : [];
  if (cuts.length === 0 || connection === undefined) {
    return { ...verificationReport(await verifySegment(deps, whole, evidence, progress)), threads: 1 };
  }
  const segments = await segmentsOf(pool, whole, cuts, evidence.checkpoints);
  const outcomes = await verifySegmentsAtOnce(deps, connection, segments, evidence, progress);
  const report = verificationReport(
    joinSegments(
      segments.map((segment, i) => ({
        seeds: segment.seeds,
        start: segment.links?.from,
        outcome: outcomes[i]!,
      })),
    ),
  );
  return { ...report, threads: segments.length };
}

/**
 * The window cut at `cuts` (link positions): each segment reads the events and links from its cut to the
 * next, and takes each chain up where the stored links before its cut leave it, with the count the last
 * checkpoint before the cut signed (a pass that got there would have matched it).
 */
async function segmentsOf(
  pool: Pool,
  whole: VerificationSegment,
  cuts: readonly string[],
  checkpoints: readonly ObservedCheckpoint[],
): Promise<VerificationSegment[]> {
  const links = whole.links!;
  const devices = whole.devices ?? (await deviceProjects(pool));
  const segments: VerificationSegment[] = [];
  for (const [i, from] of [links.from, ...cuts].entries()) {
    const before = cuts[i];
    const events: EventRange =
      i === 0 ? { ...whole.events, before } : { ...whole.events, start: { from }, before };
    if (i === 0) {
      segments.push({
        ...whole,
        events,
        links: { ...links, before },
        complete: before === undefined && whole.complete,
      });
      continue;
    }
    const seeds = await chainSeedsBefore(pool, from, { upTo: links.upTo, projectId: links.projectId });
    segments.push({
      ...whole,
      events,
      links: { ...links, from, before },
      seeds: await withVerifiedMarks(pool, seeds, whole.seeds, checkpoints),
      devices,
      complete: before === undefined && whole.complete,
    });
  }
  return segments;
}

/**
 * Each seed with the count its chain's last checkpoint up to it signed (or the window's own seed) and the
 * position of the first event after that: where one pass's unsigned tail would start.
 */
async function withVerifiedMarks(
  pool: Pool,
  seeds: ReadonlyMap<string, ChainSeed>,
  windowSeeds: ReadonlyMap<string, ChainSeed>,
  checkpoints: readonly ObservedCheckpoint[],
): Promise<Map<string, ChainSeed>> {
  const signed = new Map<string, number>();
  for (const projectId of seeds.keys()) signed.set(projectId, windowSeeds.get(projectId)?.count ?? 0);
  for (const { checkpoint } of checkpoints) {
    const seed = seeds.get(checkpoint.projectId);
    if (seed && checkpoint.count <= seed.count && checkpoint.count > signed.get(checkpoint.projectId)!)
      signed.set(checkpoint.projectId, checkpoint.count);
  }
  const unsignedFrom = await linkPositions(
    pool,
    [...seeds]
      .filter(([projectId, { count }]) => signed.get(projectId)! < count)
      .map(([projectId]) => ({ projectId, sequence: signed.get(projectId)! + 1 })),
  );
  return new Map(
    [...seeds].map(([projectId, seed]): [string, ChainSeed] => [
      projectId,
      { ...seed, verified: { count: signed.get(projectId)!, firstUnverified: unsignedFrom.get(projectId) } },
    ]),
  );
}
