import type { EventStore } from '../eventstore/port.js';
import type { Logger } from '../infra/logger.js';
import { inTransaction, type Pool } from '../infra/postgres/pool.js';
import { installProjector, lockCheckpoint, readCheckpoint, saveCheckpoint } from './checkpoints.js';
import type { Projector } from './projector.js';
import { rebuildProjector } from './rebuild.js';

export interface RunnerOptions {
  readonly batchSize: number;
  readonly signal: AbortSignal;
  readonly logger: Logger;
  /** How long a standby waits before trying to become the active instance again. */
  readonly standbyRetryMs?: number;
  /** Called after each committed batch (metrics). */
  readonly onBatch?: (projector: string, events: number, lastPosition: string | undefined) => void;
}

/**
 * Runs one projector for as long as the signal allows. Only the instance holding the projector's advisory
 * lock projects; the others stand by. Correctness does not rest on the lock: each batch commits only if the
 * checkpoint is still where this instance left it.
 */
export async function runProjector(
  pool: Pool,
  store: EventStore,
  projector: Projector,
  options: RunnerOptions,
) {
  const log = options.logger.child({ projector: projector.name });
  await installProjector(pool, projector);
  while (!options.signal.aborted) {
    const leader = await pool.connect();
    let leading = false;
    try {
      const { rows } = await leader.query<{ ok: boolean }>(
        'SELECT pg_try_advisory_lock(hashtext($1)) AS ok',
        [`projector:${projector.name}`],
      );
      leading = rows[0]!.ok;
      if (leading) {
        log.info('projector active');
        const checkpoint = await readCheckpoint(pool, projector.name);
        if (checkpoint && checkpoint.version < projector.version) {
          log.info(
            { from: checkpoint.version, to: projector.version },
            'read model version changed: rebuilding',
          );
          await rebuildProjector(pool, store, projector, {
            batchSize: options.batchSize,
            signal: options.signal,
          });
        }
        await projectWhileLeading(pool, store, projector, options);
      }
    } catch (error) {
      if (!options.signal.aborted) log.error({ err: error }, 'projector failed; retrying');
    } finally {
      if (leading)
        await leader
          .query('SELECT pg_advisory_unlock(hashtext($1))', [`projector:${projector.name}`])
          .catch(() => {});
      leader.release();
    }
    await delay(options.standbyRetryMs ?? 2000, options.signal);
  }
}

async function projectWhileLeading(
  pool: Pool,
  store: EventStore,
  projector: Projector,
  options: RunnerOptions,
) {
  for (;;) {
    const expected = (await readCheckpoint(pool, projector.name))?.position;
    const subscription = store.subscribeToAll({
      after: expected,
      eventTypes: projector.eventTypes,
      signal: options.signal,
      batchSize: options.batchSize,
    });
    let position = expected;
    let restart = false;
    for await (const batch of subscription) {
      if (batch.events.length === 0 && batch.checkpoint === position) continue;
      const committed = await commitBatch(pool, projector, position, batch.events, batch.checkpoint);
      if (!committed) {
        restart = true; // someone else moved the checkpoint (a rebuild swap): continue from theirs
        break;
      }
      position = batch.checkpoint;
      options.onBatch?.(projector.name, batch.events.length, position);
    }
    if (!restart) return;
  }
}

/** Applies one batch and moves the checkpoint, atomically; false when the checkpoint was not at `expected`. */
export async function commitBatch(
  pool: Pool,
  projector: Projector,
  expected: string | undefined,
  events: Parameters<Projector['apply']>[0],
  next: string | undefined,
): Promise<boolean> {
  return inTransaction(pool, async (client) => {
    const current = await lockCheckpoint(client, projector.name);
    if (current !== expected) return false;
    if (events.length > 0) await projector.apply(events, client);
    await saveCheckpoint(client, projector.name, next ?? expected, events.length);
    return true;
  });
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
