import { readFileSync } from 'node:fs';
import { findCapability } from '../../domain/catalogue/index.js';
import {
  FUTURE_TOLERANCE_MS,
  UTC_BUCKET_MS,
  filedAt,
  isCounter,
  utcBucketStart,
  type ReadingsRecordedData,
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
import { KEEPS_HISTORY_BEYOND_RETENTION, type Projector } from '../projector.js';
import { PreparedWork } from '../prepared-work.js';
import { RepeatedTimes } from '../repeated-times.js';
import { LocalDays } from './local-days.js';
import { BatchFold, startIn } from './batch-fold.js';
import { COUNTER_KEYS, recomputeIncreases, rollUpMinutes, type StaleCounter } from './roll-up.js';
import { PARTITIONED_TABLES, ensurePartitions, partitionsFor } from './time-partitions.js';
import { APPLIED_POSITION, INSERT_SITE_ZONES, RECORD_BATCH, RECORD_CLOSED_BATCH, SITE_ZONES } from './sql.js';

const schemaSql = readFileSync(new URL('./schema.sql', import.meta.url), 'utf8');

/** A reading without a known site (or whose site this projector never saw) is bucketed by UTC days. */
const FALLBACK_ZONE = 'UTC';

/**
 * How far behind its batch's newest server time a minute is rolled up into its hour and day: readings of
 * the minute before still arriving take the cheap path (their minute is still pending).
 */
const ROLL_UP_LAG_MS = UTC_BUCKET_MS['1m'];

/**
 * A batch whose arrivals span this long is catching up (a replay, a projector that was down), not
 * following the head: its series cross minutes within the batch, so pending minutes would only be listed,
 * rolled up by the next batch and their hours upserted twice. Such a batch closes every minute it holds
 * (its cutoff lies past the latest one a reading can be filed under) and writes hours and days at once.
 */
export const CATCHING_UP_SPAN_MS = UTC_BUCKET_MS['1m'];

const TELEMETRY_PROJECTOR_NAME = 'telemetry';

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
export function telemetryProjector(
  name = TELEMETRY_PROJECTOR_NAME,
  { catchingUpSpanMs = CATCHING_UP_SPAN_MS }: { catchingUpSpanMs?: number } = {},
): Projector {
  // Sites never change zone, so what was once read stays true; it only saves a query per batch.
  const zones = new Map<string, string>();
  const days = new LocalDays();
  return {
    name,
    version: 1,
    rebuildRefused: KEEPS_HISTORY_BEYOND_RETENTION,
    asynchronousCommit: true,
    eventTypes: ['ReadingsRecorded', 'SiteCreated'],
    tables: [
      'telemetry_raw',
      'telemetry_1m',
      'telemetry_1h',
      'telemetry_1d',
      'telemetry_pending',
      'telemetry_site_zones',
      'telemetry_applied',
    ],
    schemaSql,
    prepare(events) {
      // Only a batch whose every site zone is already known: apply looks up or records the others first.
      const ready = events.every((e) => e.type === 'ReadingsRecorded' && unknownSite(e, zones) === undefined);
      return ready ? new PreparedWork(events, batchWork(events, zones, days, catchingUpSpanMs)) : undefined;
    },
    settle: (db) => rollUpMinutes(db, { before: Number.MAX_SAFE_INTEGER }),
    async apply(events, db, prepared) {
      const { position: applied, rolled_before: rolledBefore } = (
        await db.query<{ position: string | null; rolled_before: number | null }>(
          bind(APPLIED_POSITION, [name]),
        )
      ).rows[0]!;
      const fresh = applied === null ? events : events.filter((e) => e.position > applied);
      if (fresh.length === 0) return;
      let work = PreparedWork.for<BatchWork>(prepared, fresh);
      if (!work) {
        await recordSites(fresh, db, zones);
        const messages = fresh.filter((e) => e.type === 'ReadingsRecorded');
        await loadZones(messages, db, zones);
        work = batchWork(messages, zones, days, catchingUpSpanMs);
      }
      const { partitions, parameters, devices } = work;
      // Never back: a device's minutes before a cutoff once used are rolled up, or go to their hour and day
      // as they come, so what is stored of an hour or a day always precedes its pending minutes.
      const cutoff = Math.max(work.cutoff, rolledBefore ?? 0);
      await ensurePartitions(db, partitions);
      // First, so that no minute of these devices before the cutoff is still pending when the batch's
      // readings of such a minute go to its hour and day.
      if (devices.length > 0) await rollUpMinutes(db, { devices, before: cutoff });
      const { rows } = await db.query<StaleCounter>(
        bind(work.closed ? RECORD_CLOSED_BATCH : RECORD_BATCH, [
          ...parameters,
          fresh.at(-1)!.position,
          COUNTER_KEYS,
          name,
          cutoff,
        ]),
      );
      // A closed batch's stale days end where their zone's day does.
      const { zoneOfDevice } = work;
      const stale = work.closed
        ? rows.map((r) =>
            r.resolution === '1d'
              ? { ...r, end_ms: days.of(r.start_ms, zoneOfDevice.get(r.device_id) ?? FALLBACK_ZONE).end }
              : r,
          )
        : rows;
      await recomputeIncreases(db, stale, cutoff);
    },
  };
}

type BatchWork = ReturnType<typeof batchWork>;

/**
 * What a batch of readings messages becomes before it is stored: the time partitions its rows go to,
 * RECORD_BATCH's parameters $1-$21 (raw columns, then one row per minute fold) in binary, its devices, and
 * its rollup cutoff: the minute before the one its newest server time is in, or past all of its minutes
 * when it is catching up. Made while the batch before is applied, when the batch was read ahead.
 */
function batchWork(
  messages: readonly RecordedEvent[],
  zones: ReadonlyMap<string, string>,
  days: LocalDays,
  catchingUpSpanMs: number,
) {
  const fold = new BatchFold((ms, zone) => days.of(ms, zone));
  const { instants: raw, zoneOfDevice, oldestServerMs, newestServerMs } = batchColumns(messages, zones, fold);
  const rawParameters = [
    textArray(raw.deviceIds),
    int8Array(raw.filedMs),
    uuidArray(raw.eventIds),
    timestamptzArray(raw.deviceTimes),
    timestamptzArray(raw.serverTimes),
    textArray(raw.capabilities),
    jsonbArray(raw.values),
  ];
  const devices = [...zoneOfDevice.keys()];
  const newestMinute = utcBucketStart(newestServerMs, UTC_BUCKET_MS['1m']);
  if (messages.length > 0 && newestServerMs - oldestServerMs >= catchingUpSpanMs) {
    // Past the latest minute a reading of the batch can be filed under (FUTURE_TOLERANCE_MS ahead).
    const cutoff = newestMinute + UTC_BUCKET_MS['1m'] + FUTURE_TOLERANCE_MS;
    const { partitionsOfFolds, foldParameters } = closedFolds(fold);
    return {
      closed: true,
      partitions: [...partitionsFor(PARTITIONED_TABLES.raw, raw.filedMs), ...partitionsOfFolds],
      parameters: [...rawParameters, ...foldParameters],
      zoneOfDevice,
      devices,
      cutoff,
    };
  }
  // A batch of sites alone moves no cutoff.
  const cutoff = messages.length === 0 ? 0 : newestMinute - ROLL_UP_LAG_MS;
  // A minute's fold holds all of the batch's readings of its minute: hours and days are made of minutes,
  // a pending one's when it is rolled up (ROLL_UP_MINUTES), a closed one's at once (RECORD_BATCH).
  const minutes = fold.folds().filter((b) => b.start1m !== null);
  const dayOf = minutes.map((b) => days.of(b.start1m!, zoneOfDevice.get(b.deviceId) ?? FALLBACK_ZONE));
  const partitions = [
    ...partitionsFor(PARTITIONED_TABLES.raw, raw.filedMs),
    ...partitionsFor(
      PARTITIONED_TABLES['1m'],
      minutes.map((b) => b.start1m!),
    ),
    ...partitionsFor(
      PARTITIONED_TABLES['1h'],
      minutes.map((b) => utcBucketStart(b.start1m!, UTC_BUCKET_MS['1h'])),
    ),
    ...partitionsFor(
      PARTITIONED_TABLES['1d'],
      dayOf.map((d) => d.start),
    ),
  ];
  const parameters = [
    ...rawParameters,
    textArray(minutes.map((b) => b.deviceId)),
    textArray(minutes.map((b) => b.capability)),
    int8Array(minutes.map((b) => b.start1m!)),
    int8Array(dayOf.map((d) => d.start)),
    int8Array(dayOf.map((d) => d.end)),
    int4Array(minutes.map((b) => b.samples)),
    float8Array(minutes.map((b) => b.sum)),
    float8Array(minutes.map((b) => b.min)),
    float8Array(minutes.map((b) => b.max)),
    int8Array(minutes.map((b) => b.firstMs)),
    float8Array(minutes.map((b) => b.firstValue)),
    int8Array(minutes.map((b) => b.lastMs)),
    float8Array(minutes.map((b) => b.lastValue)),
    float8Array(minutes.map((b) => b.increase)),
  ];
  return { closed: false, partitions, parameters, zoneOfDevice, devices, cutoff };
}

/**
 * RECORD_CLOSED_BATCH's fold parameters ($8-$21) and the partitions they go to: every fold as the batch
 * fold made it, a minute's standing for its hour and day where they hold the same readings.
 */
function closedFolds(fold: BatchFold) {
  const folds = fold.folds();
  const partitions = (['1m', '1h', '1d'] as const).flatMap((resolution) =>
    partitionsFor(
      PARTITIONED_TABLES[resolution],
      folds.flatMap((b) => startIn(b, resolution) ?? []),
    ),
  );
  const foldParameters = [
    textArray(folds.map((b) => b.deviceId)),
    textArray(folds.map((b) => b.capability)),
    int8Array(folds.map((b) => b.start1m)),
    int8Array(folds.map((b) => b.start1h)),
    int8Array(folds.map((b) => b.start1d)),
    int4Array(folds.map((b) => b.samples)),
    float8Array(folds.map((b) => b.sum)),
    float8Array(folds.map((b) => b.min)),
    float8Array(folds.map((b) => b.max)),
    int8Array(folds.map((b) => b.firstMs)),
    float8Array(folds.map((b) => b.firstValue)),
    int8Array(folds.map((b) => b.lastMs)),
    float8Array(folds.map((b) => b.lastValue)),
    float8Array(folds.map((b) => b.increase)),
  ];
  return { partitionsOfFolds: partitions, foldParameters };
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
  let newestServerMs = -Infinity;
  let oldestServerMs = Infinity;
  // One object handed to the fold for every reading: it keeps nothing of it (batch-fold.ts).
  const numeric = { deviceId: '', capability: '', filedMs: 0, n: 0, number: 0, counter: false, zone: '' };
  let n = 0;
  for (const event of messages) {
    const data = event.data as ReadingsRecordedData;
    const serverMs = Date.parse(data.receivedAt);
    if (serverMs > newestServerMs) newestServerMs = serverMs;
    if (serverMs < oldestServerMs) oldestServerMs = serverMs;
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
  return { instants, zoneOfDevice, oldestServerMs, newestServerMs };
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
