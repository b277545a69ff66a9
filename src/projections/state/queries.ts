import { camelCased } from '../../infra/postgres/camel-cased.js';
import type { Pool } from '../../infra/postgres/pool.js';
import { DEVICE_PRESENCE, DEVICE_STATE } from './sql.js';

export interface StateEntry {
  readonly capability: string;
  /** As reported: a number, a boolean or a text. */
  readonly value: number | boolean | string;
  readonly unit: string;
  readonly deviceTime: Date | null;
  readonly serverTime: Date;
}

export interface DeviceState {
  /** Null until a connectivity change has been observed. */
  readonly connectivity: string | null;
  readonly lastSeenAt: Date | null;
  readonly entries: readonly StateEntry[];
}

/** The latest readings and presence of one device (the caller has checked the device is visible). */
export async function readDeviceState(pool: Pool, deviceId: string): Promise<DeviceState> {
  const [state, presence] = await Promise.all([
    pool.query<{
      capability: string;
      value: number | boolean | string;
      unit: string;
      device_time: Date | null;
      server_time: Date;
    }>(DEVICE_STATE, [deviceId]),
    pool.query<{ connectivity: string | null; last_seen_at: Date | null }>(DEVICE_PRESENCE, [deviceId]),
  ]);
  const p = presence.rows[0];
  return {
    connectivity: p?.connectivity ?? null,
    lastSeenAt: p?.last_seen_at ?? null,
    entries: state.rows.map(camelCased),
  };
}
