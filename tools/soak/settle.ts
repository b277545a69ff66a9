import { setTimeout as sleep } from 'node:timers/promises';
import type { EdgeSim } from '../../src/edge-sim/index.js';
import type { EventStore } from '../../src/eventstore/port.js';
import type { Pool } from '../../src/infra/postgres/pool.js';
import { isCaughtUp } from '../../src/projections/catch-up.js';
import type { Projector } from '../../src/projections/projector.js';

/** Polls `probe` until it returns true; false once `timeoutMs` has passed. */
export async function waitFor(probe: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe()) return true;
    if (Date.now() >= deadline) return false;
    await sleep(100);
  }
}

/** Until the simulator's queue is empty and nothing is in flight (every message acknowledged). */
export function simulatorDrained(sim: EdgeSim, timeoutMs: number): Promise<boolean> {
  return waitFor(() => {
    const { queued, inflight } = sim.stats();
    return queued === 0 && inflight === 0;
  }, timeoutMs);
}

/**
 * Until no event of any projector's types lies beyond its checkpoint, as far as events are visible now
 * (events become visible in commit order, see the Postgres adapter, so this may take a while on a busy
 * server). A checkpoint need not reach the head itself: events of other types do not move it.
 */
export function projectorsCaughtUp(
  pool: Pool,
  store: EventStore,
  projectors: readonly Pick<Projector, 'name' | 'eventTypes'>[],
  timeoutMs: number,
): Promise<boolean> {
  return waitFor(async () => {
    for (const projector of projectors) if (!(await isCaughtUp(pool, store, projector))) return false;
    return true;
  }, timeoutMs);
}
