import type { ReadingsRecordedData } from '../../src/domain/readings/index.js';
import type { EventStore } from '../../src/eventstore/port.js';
import type { Pool } from '../../src/infra/postgres/pool.js';
import { messageKey, type MessageLedger } from './ledger.js';

export interface ReadingsReport {
  /** Messages (and their readings) the broker acknowledged to the agent. */
  readonly messagesAcked: number;
  readonly readingsAcked: number;
  /** Distinct (device, seq) messages in the event store, and their readings. */
  readonly messagesStored: number;
  readonly readingsStored: number;
  /** Rows of telemetry_raw. */
  readonly readingsProjected: number;
  /** Acknowledged but not in the store. */
  readonly lost: number;
  /** (device, seq) stored more than once (as distinct events). */
  readonly duplicated: number;
  /** Stored with other readings than the agent sent under that (device, seq). */
  readonly altered: number;
  /** Stored but never sent by the agent. */
  readonly unknown: number;
  /** Acknowledged readings missing from telemetry_raw, and rows there beyond one per reading. */
  readonly projectionMissing: number;
  readonly projectionExtra: number;
  /** Messages the agent put on the wire more than once. */
  readonly resent: number;
  /** Of those, resent after the store already held them: the broker had stored them but the PUBACK was lost. */
  readonly redeliveredAfterStored: number;
  /** A few offending keys per kind, for the failure message. */
  readonly examples: Readonly<Record<string, readonly string[]>>;
}

/**
 * Compares what the agent sent and had acknowledged with the event store and the raw telemetry read model,
 * by the agent's own message id (device, seq) and the readings' content, never by event id (which is derived
 * from (device, seq) and therefore unique by construction).
 */
export async function checkReadings(
  pool: Pool,
  store: EventStore,
  ledger: MessageLedger,
): Promise<ReadingsReport> {
  // The faults, in the order the report lists them; each is counted with a few of its keys as examples.
  const faults = { lost: 0, duplicated: 0, altered: 0, unknown: 0, projectionMissing: 0, projectionExtra: 0 };
  const examples: Record<string, string[]> = {};
  const fault = (kind: keyof typeof faults, key: string, count = 1) => {
    faults[kind] += count;
    const list = (examples[kind] ??= []);
    if (list.length < 5) list.push(key);
  };

  const stored = new Map<string, { count: number; readings: string; receivedMs: number }>();
  let readingsStored = 0;
  let after: string | undefined;
  for (;;) {
    const page = await store.readAll({ after, maxCount: 5000, eventTypes: ['ReadingsRecorded'] });
    for (const event of page.events) {
      const data = event.data as ReadingsRecordedData;
      const key = messageKey(data.deviceId, data.seq ?? -1);
      const seen = stored.get(key);
      if (seen) seen.count += 1;
      else
        stored.set(key, {
          count: 1,
          readings: contentOf(data.readings),
          receivedMs: Date.parse(data.receivedAt),
        });
      readingsStored += data.readings.length;
    }
    if (page.lastPosition !== undefined) after = page.lastPosition;
    if (page.atEnd) break;
  }

  let messagesAcked = 0;
  let readingsAcked = 0;
  let resent = 0;
  let redeliveredAfterStored = 0;
  const expectedRaw = new Map<string, number>();
  for (const entry of ledger.entries()) {
    const key = messageKey(entry.deviceId, entry.seq);
    const copy = stored.get(key);
    if (entry.sends > 1) {
      resent += 1;
      if (copy && copy.receivedMs < entry.lastSentMs) redeliveredAfterStored += 1;
    }
    if (copy && copy.readings !== contentOf(entry.readings)) {
      fault('altered', key);
    }
    if (!entry.acked) continue;
    messagesAcked += 1;
    readingsAcked += entry.readings.length;
    if (!copy) {
      fault('lost', key);
      continue;
    }
    for (const r of entry.readings) {
      const row = rawKey(entry.deviceId, r.capability, Date.parse(r.deviceTime), r.value);
      expectedRaw.set(row, (expectedRaw.get(row) ?? 0) + 1);
    }
  }
  for (const [key, copy] of stored) {
    if (copy.count > 1) {
      fault('duplicated', key);
    }
    const [deviceId, seq] = key.split('#');
    if (!ledger.get(deviceId!, Number(seq))) {
      fault('unknown', key);
    }
  }

  // Multisets of (device, capability, device time, value): a reading projected twice counts twice.
  const { rows } = await pool.query<{ device_id: string; capability: string; ms: string; value: unknown }>(
    `SELECT r.device_id, c.capability, (extract(epoch FROM r.device_time) * 1000)::bigint AS ms,
            r.reading_values -> (c.i - 1)::int AS value
       FROM telemetry_raw r, unnest(r.capabilities) WITH ORDINALITY AS c(capability, i)`,
  );
  const projected = new Map<string, number>();
  for (const r of rows) {
    const key = rawKey(r.device_id, r.capability, Number(r.ms), r.value);
    projected.set(key, (projected.get(key) ?? 0) + 1);
  }
  for (const [key, n] of expectedRaw) {
    const have = projected.get(key) ?? 0;
    if (have < n) {
      fault('projectionMissing', key, n - have);
    }
  }
  // Rows of stored but unacknowledged messages are expected; rows beyond the stored copies are not.
  const storedRaw = new Map<string, number>();
  for (const entry of ledger.entries()) {
    if (!stored.has(messageKey(entry.deviceId, entry.seq))) continue;
    for (const r of entry.readings) {
      const key = rawKey(entry.deviceId, r.capability, Date.parse(r.deviceTime), r.value);
      storedRaw.set(key, (storedRaw.get(key) ?? 0) + 1);
    }
  }
  for (const [key, have] of projected) {
    const allowed = storedRaw.get(key) ?? 0;
    if (have > allowed) {
      fault('projectionExtra', key, have - allowed);
    }
  }

  return {
    messagesAcked,
    readingsAcked,
    messagesStored: stored.size,
    readingsStored,
    readingsProjected: rows.length,
    ...faults,
    resent,
    redeliveredAfterStored,
    examples,
  };
}

function contentOf(readings: readonly { capability: string; value: unknown; deviceTime?: string }[]): string {
  return JSON.stringify(
    readings.map((r) => [
      r.capability,
      r.value,
      r.deviceTime === undefined ? null : new Date(r.deviceTime).toISOString(),
    ]),
  );
}

function rawKey(deviceId: string, capability: string, deviceMs: number, value: unknown): string {
  return JSON.stringify([deviceId, capability, deviceMs, value]);
}
