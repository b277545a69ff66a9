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
import { arrayLiteral } from '../../infra/postgres/array-literal.js';
import {
  float8Array,
  int4Array,
  int8Array,
  jsonbArray,
  textArray,
  timestamptzArray,
  uuidArray,
} from '../../infra/postgres/binary-array.js';
import { bind } from '../../infra/postgres/prepared.js';
import { deviceKeyOf, type PartitionableProjector } from '../partitions.js';
import type { Projector } from '../projector.js';
import { PreparedWork } from '../prepared-work.js';
import { RepeatedTimes } from '../repeated-times.js';
import { LocalDays } from './local-days.js';
import { BatchFold, startIn } from './batch-fold.js';
import { PARTITIONED_TABLES, ensurePartitions, partitionsFor } from './time-partitions.js';
import { APPLIED_POSITION, INSERT_SITE_ZONES, RECOMPUTE_INCREASE, RECORD_BATCH, SITE_ZONES } from './sql.js';

const schemaSql = readFileSync(new URL('./schema.sql', import.meta.url), 'utf8');

/** A reading without a known site (or whose site this projector never saw) is bucketed by UTC days. */
const FALLBACK_ZONE = 'UTC';

const COUNTER_KEYS = CAPABILITIES.filter(isCounter).map((c) => c.key);

export const TELEMETRY_PROJECTOR_NAME = 'telemetry';

/**
 * Partitioned by device; SiteCreated has no device, so every partition records the site's zone before any
 * of its readings needs it (the zone table is shared and the insert is idempotent).
 */
export const telemetryFamily: PartitionableProjector = {
  family: TELEMETRY_PROJECTOR_NAME,
  create: (name) => telemetryProjector(name),
  keyOf: (event) => (event.type === 'SiteCreated' ? undefined : deviceKeyOf(event)),
};

/**
 * Raw readings and 1m, 1h and 1d buckets from ReadingsRecorded; site zones from SiteCreated. A batch's
 * readings are folded per bucket in memory (batch-fold.ts), then stored with one statement: raw rows, one
 * upsert per touched bucket, and the applied position (sql.ts, RECORD_BATCH), after the time partitions
 * they go to are made sure of (time-partitions.ts).
 */
export function telemetryProjector(name = TELEMETRY_PROJECTOR_NAME): Projector {
  // Sites never change zone, so what was once read stays true; it only saves a query per batch.
  const zones = new Map<string, string>();
  const days = new LocalDays();
  return {
    name,
    version: 1,
    keepsHistoryBeyondRetention: true,
    asynchronousCommit: true,
    eventTypes: ['ReadingsRecorded', 'SiteCreated'],
    tables: [
      'telemetry_raw',
      'telemetry_1m',
      'telemetry_1h',
      'telemetry_1d',
      'telemetry_site_zones',
      'telemetry_applied',
    ],
    schemaSql,
    prepare(events) {
      // Only a batch whose every site zone is already known: apply looks up or records the others first.
      const ready = events.every((e) => e.type === 'ReadingsRecorded' && unknownSite(e, zones) === undefined);
      return ready ? new PreparedWork(events, batchWork(events, zones, days)) : undefined;
    },
    async apply(events, db, prepared) {
      const applied = (await db.query<{ position: string }>(bind(APPLIED_POSITION, [name]))).rows[0]
        ?.position;
      const fresh = applied === undefined ? events : events.filter((e) => e.position > applied);
      if (fresh.length === 0) return;
      let work = PreparedWork.for<BatchWork>(prepared, fresh);
      if (!work) {
        await recordSites(fresh, db, zones);
        const messages = fresh.filter((e) => e.type === 'ReadingsRecorded');
        await loadZones(messages, db, zones);
        work = batchWork(messages, zones, days);
      }
      const { zoneOfDevice, partitions, parameters } = work;
      await ensurePartitions(db, partitions);
      const { rows } = await db.query<{
        resolution: StoredResolution;
        device_id: string;
        capability: string;
        start_ms: number;
      }>(bind(RECORD_BATCH, [...parameters, fresh.at(-1)!.position, COUNTER_KEYS, name]));
      if (rows.length === 0) return;
      // A late reading landed inside a counter bucket: rebuild its increase from the raw readings.
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

type BatchWork = ReturnType<typeof batchWork>;

/**
 * What a batch of readings messages becomes before it is stored: its folded readings, the time partitions
 * its rows go to, and RECORD_BATCH's parameters $1-$21 (raw columns, then one row per fold) in binary.
 * Made while the batch before is applied, when the batch was read ahead.
 */
function batchWork(messages: readonly RecordedEvent[], zones: ReadonlyMap<string, string>, days: LocalDays) {
  const fold = new BatchFold((ms, zone) => days.of(ms, zone));
  const { instants: raw, zoneOfDevice } = batchColumns(messages, zones, fold);
  const buckets = fold.folds();
  const partitions = [
    ...partitionsFor(PARTITIONED_TABLES.raw, raw.filedMs),
    ...(['1m', '1h', '1d'] as const).flatMap((resolution) =>
      partitionsFor(
        PARTITIONED_TABLES[resolution],
        buckets.flatMap((b) => startIn(b, resolution) ?? []),
      ),
    ),
  ];
  const parameters = [
    textArray(raw.deviceIds),
    int8Array(raw.filedMs),
    uuidArray(raw.eventIds),
    timestamptzArray(raw.deviceTimes),
    timestamptzArray(raw.serverTimes),
    textArray(raw.capabilities),
    jsonbArray(raw.values),
    textArray(buckets.map((b) => b.deviceId)),
    textArray(buckets.map((b) => b.capability)),
    int8Array(buckets.map((b) => b.start1m)),
    int8Array(buckets.map((b) => b.start1h)),
    int8Array(buckets.map((b) => b.start1d)),
    int4Array(buckets.map((b) => b.samples)),
    float8Array(buckets.map((b) => b.sum)),
    float8Array(buckets.map((b) => b.min)),
    float8Array(buckets.map((b) => b.max)),
    int8Array(buckets.map((b) => b.firstMs)),
    float8Array(buckets.map((b) => b.firstValue)),
    int8Array(buckets.map((b) => b.lastMs)),
    float8Array(buckets.map((b) => b.lastValue)),
    float8Array(buckets.map((b) => b.increase)),
  ];
  return { zoneOfDevice, partitions, parameters };
}

async function recordSites(events: readonly RecordedEvent[], db: PoolClient, zones: Map<string, string>) {
  const sites = events.filter((e) => e.type === 'SiteCreated').map((e) => e.data as SiteEvent['data']);
  if (sites.length === 0) return;
  await db.query(INSERT_SITE_ZONES, [sites.map((s) => s.siteId), sites.map((s) => s.timezone)]);
  for (const s of sites) if (!zones.has(s.siteId)) zones.set(s.siteId, s.timezone);
}

/** The site of a readings message when its zone is not known yet (a message without a site needs none). */
function unknownSite(message: RecordedEvent, zones: ReadonlyMap<string, string>): string | undefined {
  const { siteId } = message.data as ReadingsRecordedData;
  return siteId !== undefined && !zones.has(siteId) ? siteId : undefined;
}

async function loadZones(messages: readonly RecordedEvent[], db: PoolClient, zones: Map<string, string>) {
  const missing = new Set<string>();
  for (const e of messages) {
    const siteId = unknownSite(e, zones);
    if (siteId !== undefined) missing.add(siteId);
  }
  if (missing.size === 0) return;
  const { rows } = await db.query<{ site_id: string; timezone: string }>(SITE_ZONES, [[...missing]]);
  for (const row of rows) zones.set(row.site_id, row.timezone);
}

/**
 * In one pass over the batch: its numeric readings folded into `fold` in order of application (`n` counts
 * every reading, text too), the rows they make in telemetry_raw (RawColumns): one row per instant of a
 * message (its neighbouring readings with the same filing time and device time, in message order), and
 * the zone each device's days follow. Text, and keys retired from the catalogue, are kept raw only: they
 * have no buckets.
 */
function batchColumns(
  messages: readonly RecordedEvent[],
  zones: ReadonlyMap<string, string>,
  fold: BatchFold,
) {
  const instants = new RawColumns();
  const zoneOfDevice = new Map<string, string>();
  const deviceTimes = new RepeatedTimes();
  // One object handed to the fold for every reading: it keeps nothing of it (batch-fold.ts).
  const numeric = { deviceId: '', capability: '', filedMs: 0, n: 0, number: 0, counter: false, zone: '' };
  let n = 0;
  for (const event of messages) {
    const data = event.data as ReadingsRecordedData;
    const serverMs = Date.parse(data.receivedAt);
    const zone = (data.siteId !== undefined && zones.get(data.siteId)) || FALLBACK_ZONE;
    if (zoneOfDevice.get(data.deviceId) !== zone) zoneOfDevice.set(data.deviceId, zone);
    const { readings } = data;
    // Only neighbours share a row: readings of two rows filed at the same time (no device time, and an
    // implausible one) then still come back in message order, which is what ties are broken by.
    let first = 0;
    let instantMs = 0;
    let instantDeviceTime: string | null = null;
    for (let i = 0; i < readings.length; i++) {
      const reading = readings[i]!;
      const filedMs = filedAt(serverMs, deviceTimes.ms(reading.deviceTime));
      const capability = findCapability(reading.capability);
      if (typeof reading.value !== 'string' && capability !== undefined) {
        numeric.deviceId = data.deviceId;
        numeric.capability = capability.key;
        numeric.filedMs = filedMs;
        numeric.n = n;
        numeric.number = Number(reading.value);
        numeric.counter = isCounter(capability);
        numeric.zone = zone;
        fold.add(numeric);
      }
      n += 1;
      const deviceTime = reading.deviceTime ?? null;
      if (i > first && (filedMs !== instantMs || deviceTime !== instantDeviceTime)) {
        instants.add(event.id, data, first, i, instantMs, instantDeviceTime);
        first = i;
      }
      if (i === first) {
        instantMs = filedMs;
        instantDeviceTime = deviceTime;
      }
    }
    if (readings.length > 0)
      instants.add(event.id, data, first, readings.length, instantMs, instantDeviceTime);
  }
  return { instants, zoneOfDevice };
}

/**
 * A batch's rows of telemetry_raw as its columns. An instant (readings `from` to `to` of a message) goes
 * as the text of a PostgreSQL array of its capabilities and the text of a JSON array of its values. A
 * method rather than a closure made per message: the service runs through tsx, whose esbuild gives every
 * named function it makes a name property, and that defineProperty per message was 2 % of the replay's
 * samples.
 */
class RawColumns {
  readonly deviceIds: string[] = [];
  readonly filedMs: number[] = [];
  readonly eventIds: string[] = [];
  readonly deviceTimes: (string | null)[] = [];
  readonly serverTimes: string[] = [];
  readonly capabilities: string[] = [];
  readonly values: string[] = [];
  // Messages of one batch nearly always repeat their capabilities: their text is written once while it repeats.
  #lastCapabilities: string[] = [];
  #lastCapabilityText = '{}';
  // Reused for every instant's values: only their JSON text is kept.
  readonly #instantValues: unknown[] = [];

  add(
    eventId: string,
    data: ReadingsRecordedData,
    from: number,
    to: number,
    filedMs: number,
    deviceTime: string | null,
  ): void {
    this.deviceIds.push(data.deviceId);
    this.filedMs.push(filedMs);
    this.eventIds.push(eventId);
    this.deviceTimes.push(deviceTime);
    this.serverTimes.push(data.receivedAt);
    this.capabilities.push(this.#capabilityText(data.readings, from, to));
    const values = this.#instantValues;
    values.length = 0;
    for (let i = from; i < to; i++) values.push(data.readings[i]!.value);
    this.values.push(JSON.stringify(values));
  }

  #capabilityText(readings: ReadingsRecordedData['readings'], from: number, to: number): string {
    const last = this.#lastCapabilities;
    let same = to - from === last.length;
    for (let i = from; same && i < to; i++) same = readings[i]!.capability === last[i - from];
    if (!same) {
      this.#lastCapabilities = readings.slice(from, to).map((r) => r.capability);
      this.#lastCapabilityText = arrayLiteral(this.#lastCapabilities)!;
    }
    return this.#lastCapabilityText;
  }
}
