import { CAPABILITIES } from '../../domain/catalogue/index.js';
import { isCounter, type StoredResolution } from '../../domain/readings/index.js';
import type { Pool, PoolClient } from '../../infra/postgres/pool.js';
import { textArray } from '../../infra/postgres/binary-array.js';
import { bind } from '../../infra/postgres/prepared.js';
import { RECOMPUTE_INCREASE, ROLL_UP_ALL_MINUTES, ROLL_UP_MINUTES } from './sql.js';

export const COUNTER_KEYS = CAPABILITIES.filter(isCounter).map((c) => c.key);

/** A counter bucket whose increase a merge had to drop, as RECORD_BATCH and the rollups return it. */
export interface StaleCounter {
  readonly resolution: StoredResolution;
  readonly device_id: string;
  readonly capability: string;
  readonly start_ms: number;
  readonly end_ms: number;
}

/**
 * Rolls the minutes before `before` (ms) of `devices` (every device when absent) up into their hours and
 * days, and takes them off telemetry_pending. Two statements: the caller's transaction holds them together.
 */
export async function rollUpMinutes(
  db: Pool | PoolClient,
  { devices, before }: { devices?: readonly string[]; before: number },
): Promise<void> {
  const { rows } = await db.query<StaleCounter>(
    devices
      ? bind(ROLL_UP_MINUTES, [textArray(devices), before, COUNTER_KEYS])
      : { text: ROLL_UP_ALL_MINUTES, values: [null, before, COUNTER_KEYS] },
  );
  await recomputeIncreases(db, rows, before);
}

/**
 * Rebuilds each stale counter bucket's increase from its raw readings. An hour or a day holds only its
 * rolled-up minutes, all before `rolledBefore`; its later minutes are still pending and added by readers,
 * so their readings must not count here too.
 */
export async function recomputeIncreases(
  db: Pool | PoolClient,
  stale: readonly StaleCounter[],
  rolledBefore: number,
): Promise<void> {
  for (const resolution of ['1m', '1h', '1d'] as const) {
    const of = stale.filter((r) => r.resolution === resolution);
    if (of.length === 0) continue;
    const end = (r: StaleCounter) => (resolution === '1m' ? r.end_ms : Math.min(r.end_ms, rolledBefore));
    await db.query(RECOMPUTE_INCREASE[resolution], [
      of.map((r) => r.device_id),
      of.map((r) => r.capability),
      of.map((r) => new Date(r.start_ms).toISOString()),
      of.map((r) => new Date(end(r)).toISOString()),
    ]);
  }
}
