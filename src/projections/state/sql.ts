import { prepared } from '../../infra/postgres/prepared.js';

/** Statements of the state read model (tables in schema.sql). */

/**
 * One batch in one statement: the latest value per (device, capability) ($1-$6) and each device's presence
 * ($7-$10). Rows of one batch are already reduced to the winner per key; a stored value yields only to a
 * later one. A null connectivity_at carries no connectivity; greatest() ignores a null last_seen_at. An
 * empty array leaves its table alone.
 */
export const RECORD_STATE = prepared(
  'state.record-batch',
  `
  WITH state AS (
    INSERT INTO device_state AS s (device_id, capability, value, unit, device_time, server_time)
    SELECT * FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::text[], $5::timestamptz[], $6::timestamptz[])
    ON CONFLICT (device_id, capability) DO UPDATE
       SET value = excluded.value, unit = excluded.unit, device_time = excluded.device_time,
           server_time = excluded.server_time
     WHERE excluded.server_time >= s.server_time
  ),
  presence AS (
    INSERT INTO device_presence AS p (device_id, connectivity, connectivity_at, last_seen_at)
    SELECT * FROM unnest($7::text[], $8::text[], $9::timestamptz[], $10::timestamptz[])
    ON CONFLICT (device_id) DO UPDATE
       SET connectivity = CASE WHEN excluded.connectivity_at >= p.connectivity_at OR p.connectivity_at IS NULL
                               THEN coalesce(excluded.connectivity, p.connectivity) ELSE p.connectivity END,
           connectivity_at = greatest(p.connectivity_at, excluded.connectivity_at),
           last_seen_at = greatest(p.last_seen_at, excluded.last_seen_at)
  )
  SELECT 1`,
);

export const DEVICE_STATE = `
  SELECT capability, value, unit, device_time, server_time FROM device_state WHERE device_id = $1`;

export const DEVICE_PRESENCE = `
  SELECT connectivity, last_seen_at FROM device_presence WHERE device_id = $1`;
