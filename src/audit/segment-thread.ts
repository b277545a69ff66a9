import { parentPort, workerData } from 'node:worker_threads';
import { openEventStore } from '../eventstore/open.js';
import { createLogger } from '../infra/logger.js';
import { createPool } from '../infra/postgres/pool.js';
import type { SegmentThreadInput, SegmentThreadMessage } from './segment-threads.js';
import { verifySegment } from './verify-segment.js';

/**
 * A worker thread of `audit verify` (segment-threads.ts): one segment verified over connections of its own,
 * its progress and then its outcome (or why it failed) posted back.
 */
const input = workerData as SegmentThreadInput;
const post = (message: SegmentThreadMessage) => parentPort!.postMessage(message);
const pool = createPool(input.connection.databaseUrl, {
  max: 3,
  applicationName: 'device-cloud-audit-verify',
});
try {
  const store = await openEventStore(
    input.connection.eventStore,
    { pool, url: input.connection.databaseUrl },
    createLogger('warn', process.stderr),
  );
  try {
    const outcome = await verifySegment({ store, pool }, input.segment, input.evidence, (events) =>
      post({ progress: events }),
    );
    post({ outcome });
  } finally {
    await store.close();
  }
} catch (error) {
  post({ failed: error instanceof Error ? error.message : String(error) });
} finally {
  await pool.end();
}
