import { readFileSync } from 'node:fs';
import { CAPABILITIES, findCapability } from '../../domain/catalogue/index.js';
import {
  UTC_BUCKET_MS,
  filedAt,
  isCounter,
  type ReadingsRecordedData,
  type StoredResolution,
} from '../../domain/readings/index.js';
import type { SiteEvent } from '../../domain/sites/index.js';
import type { RecordedEvent } from '../../eventstore/port.js';
import type { PoolClient } from '../../infra/postgres/pool.js';
import type { Projector } from '../projector.js';
import { LocalDays } from './local-days.js';
import { INSERT_SITE_ZONES, RECOMPUTE_INCREASE, RECORD_READINGS, SITE_ZONES } from './sql.js';

const schemaSql = readFileSync(new URL('./schema.sql', import.meta.url), 'utf8');

/** A reading without a known site (or whose site this projector never saw) is bucketed by UTC days. */
const FALLBACK_ZONE = 'UTC';

const COUNTER_KEYS = CAPABILITIES.filter(isCounter).map((c) => c.key);

interface Reading {
  readonly deviceId: string;
  readonly capability: string;
  readonly filedMs: number;
  readonly eventId: string;
  readonly ordinal: number;
  readonly value: number | boolean | string;
  readonly deviceTime: string | null;
  readonly serverTime: string;
  readonly siteId: string | undefined;
}

/**
 * Raw readings and 1m, 1h and 1d buckets from ReadingsRecorded; site zones from SiteCreated. The buckets
 * are folded in the database in the statement that stores the raw readings (sql.ts, RECORD_READINGS).
 */
export function telemetryProjector(): Projector {
  // Sites never change zone, so what was once read stays true; it only saves a query per batch.
  const zones = new Map<string, string>();
  const days = new LocalDays();
  return {
    name: 'telemetry',
    version: 1,
    keepsHistoryBeyondRetention: true,
    eventTypes: ['ReadingsRecorded', 'SiteCreated'],
    tables: ['telemetry_raw', 'telemetry_1m', 'telemetry_1h', 'telemetry_1d', 'telemetry_site_zones'],
    schemaSql,
    async apply(events, db) {
      await recordSites(events, db, zones);
      const readings = events.filter((e) => e.type === 'ReadingsRecorded').flatMap(readingsOf);
      if (readings.length === 0) return;
      await loadZones(readings, db, zones);
      const zoneOf = (r: { siteId: string | undefined }) =>
        (r.siteId !== undefined && zones.get(r.siteId)) || FALLBACK_ZONE;
      const capabilities = readings.map((r) => findCapability(r.capability));
      // Text, and keys retired from the catalogue, are kept raw only: they have no buckets.
      const numbers = readings.map((r, i) =>
        typeof r.value === 'string' || capabilities[i] === undefined ? null : Number(r.value),
      );
      const { rows } = await db.query<{
        resolution: StoredResolution;
        device_id: string;
        capability: string;
        start_ms: number;
      }>(RECORD_READINGS, [
        readings.map((r) => r.deviceId),
        readings.map((r) => r.capability),
        readings.map((r) => r.filedMs),
        readings.map((r) => r.eventId),
        readings.map((r) => r.ordinal),
        readings.map((r) => JSON.stringify(r.value)),
        readings.map((r) => r.deviceTime),
        readings.map((r) => r.serverTime),
        numbers,
        capabilities.map((c) => c !== undefined && isCounter(c)),
        readings.map((r, i) => (numbers[i] === null ? null : days.of(r.filedMs, zoneOf(r)).start)),
        COUNTER_KEYS,
      ]);
      if (rows.length === 0) return;
      // A late reading landed inside a counter bucket: rebuild its increase from the raw readings.
      const zoneOfDevice = new Map(readings.map((r) => [r.deviceId, zoneOf(r)]));
      for (const resolution of ['1m', '1h', '1d'] as const) {
        const stale = rows.filter((r) => r.resolution === resolution);
        if (stale.length === 0) continue;
        const end = (r: (typeof stale)[number]) =>
          resolution === '1d'
            ? days.of(r.start_ms, zoneOfDevice.get(r.device_id) ?? FALLBACK_ZONE).end
            : r.start_ms + UTC_BUCKET_MS[resolution];
        await db.query(RECOMPUTE_INCREASE[resolution], [
          stale.map((r) => r.device_id),
          stale.map((r) => r.capability),
          stale.map((r) => new Date(r.start_ms).toISOString()),
          stale.map((r) => new Date(end(r)).toISOString()),
        ]);
      }
    },
  };
}

async function recordSites(events: readonly RecordedEvent[], db: PoolClient, zones: Map<string, string>) {
  const sites = events.filter((e) => e.type === 'SiteCreated').map((e) => e.data as SiteEvent['data']);
  if (sites.length === 0) return;
  await db.query(INSERT_SITE_ZONES, [sites.map((s) => s.siteId), sites.map((s) => s.timezone)]);
  for (const s of sites) if (!zones.has(s.siteId)) zones.set(s.siteId, s.timezone);
}

async function loadZones(readings: readonly Reading[], db: PoolClient, zones: Map<string, string>) {
  const missing = [...new Set(readings.map((r) => r.siteId))].filter(
    (id): id is string => id !== undefined && !zones.has(id),
  );
  if (missing.length === 0) return;
  const { rows } = await db.query<{ site_id: string; timezone: string }>(SITE_ZONES, [missing]);
  for (const row of rows) zones.set(row.site_id, row.timezone);
}

function readingsOf(event: RecordedEvent): Reading[] {
  const data = event.data as ReadingsRecordedData;
  const serverMs = Date.parse(data.receivedAt);
  return data.readings.map((reading, ordinal) => ({
    deviceId: data.deviceId,
    capability: reading.capability,
    filedMs: filedAt(serverMs, reading.deviceTime === undefined ? undefined : Date.parse(reading.deviceTime)),
    eventId: event.id,
    ordinal,
    value: reading.value,
    deviceTime: reading.deviceTime ?? null,
    serverTime: data.receivedAt,
    siteId: data.siteId,
  }));
}
