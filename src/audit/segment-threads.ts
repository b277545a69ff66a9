import type { Worker } from 'node:worker_threads';
import type { Config } from '../config.js';
import type { VerificationOutcome } from '../domain/audit/verification.js';
import type { EventStore } from '../eventstore/port.js';
import type { Pool } from '../infra/postgres/pool.js';
import { workerThread } from '../infra/worker-thread.js';
import { verifySegment, type SegmentEvidence, type VerificationSegment } from './verify-segment.js';

/** How a worker thread reaches the same store: the database's URL and the event store's settings. */
export interface StoreConnection {
  readonly databaseUrl: string;
  readonly eventStore: Pick<
    Config,
    'EVENTSTORE_URL' | 'EVENTSTORE_FOLLOWER_READS' | 'PROJECTION_IDLE_POLL_MS'
  >;
}

/** The connection a thread needs, and nothing else of the configuration (no secret crosses to it). */
export function storeConnection(databaseUrl: string, config: StoreConnection['eventStore']): StoreConnection {
  const { EVENTSTORE_URL, EVENTSTORE_FOLLOWER_READS, PROJECTION_IDLE_POLL_MS } = config;
  return { databaseUrl, eventStore: { EVENTSTORE_URL, EVENTSTORE_FOLLOWER_READS, PROJECTION_IDLE_POLL_MS } };
}

export interface SegmentThreadInput {
  readonly connection: StoreConnection;
  readonly segment: VerificationSegment;
  readonly evidence: SegmentEvidence;
}

export type SegmentThreadMessage =
  { readonly progress: number } | { readonly outcome: VerificationOutcome } | { readonly failed: string };

/**
 * The segments verified at once: the first in this thread, over `deps`; each other in a worker thread of
 * its own (segment-thread.ts), so verification uses as many cores as it has segments. Their outcomes come
 * back in segment order; the first failure stops the others.
 */
export async function verifySegmentsAtOnce(
  deps: { readonly store: EventStore; readonly pool: Pool },
  connection: StoreConnection,
  segments: readonly VerificationSegment[],
  evidence: SegmentEvidence,
  onProgress: (events: number) => void,
): Promise<VerificationOutcome[]> {
  const workers: Worker[] = [];
  const inThreads = segments.slice(1).map((segment) => {
    const worker = workerThread(import.meta.url, './segment-thread', {
      connection,
      segment,
      evidence,
    } satisfies SegmentThreadInput);
    workers.push(worker);
    return outcomeOf(worker, onProgress);
  });
  try {
    return await Promise.all([verifySegment(deps, segments[0]!, evidence, onProgress), ...inThreads]);
  } finally {
    await Promise.all(workers.map((worker) => worker.terminate()));
  }
}

function outcomeOf(worker: Worker, onProgress: (events: number) => void): Promise<VerificationOutcome> {
  return new Promise((resolve, reject) => {
    worker.on('message', (message: SegmentThreadMessage) => {
      if ('progress' in message) onProgress(message.progress);
      else if ('outcome' in message) resolve(message.outcome);
      else reject(new Error(`a verification thread failed: ${message.failed}`));
    });
    worker.on('error', reject);
    worker.on('exit', (code) => reject(new Error(`a verification thread stopped (exit code ${code})`)));
  });
}
