import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { randomUUID } from 'node:crypto';
import { readingsStreamName } from '../src/domain/readings/index.js';
import type { BatchEntry } from '../src/eventstore/port.js';
import { PostgresEventStore } from '../src/eventstore/postgres/adapter.js';
import { createPool, type Pool } from '../src/infra/postgres/pool.js';
import { catchUpProjector } from '../src/projections/catch-up.js';
import { devicesProjector } from '../src/projections/devices/projector.js';
import type { Projector } from '../src/projections/projector.js';
import { rebuildProjector } from '../src/projections/rebuild.js';
import { stateProjector } from '../src/projections/state/projector.js';
import { telemetryProjector } from '../src/projections/telemetry/projector.js';
import { CpuMeter, round } from './cpu.js';
import { BENCH_APPLICATION, benchDatabase, ceilings, machine, report } from './support.js';

/**
 * Each ingest component alone, on the same machine and in the same run as the end-to-end figures, so
 * their ceilings and CPU costs sit side by side:
 * - ingest.append.batch: grouped appends of readings messages (READINGS_BATCH messages over as many
 *   devices, 4 writers), as the ingress writes them.
 * - projector.<name>.replay: the state and telemetry projectors alone, from a store pre-filled by the
 *   appends above, batch by batch with checkpoints as the runner commits them. These read models refuse
 *   operator rebuilds, so this is also their replay speed.
 * - projection.rebuild.devices: rebuilding the device list (the read model users do rebuild) from
 *   DeviceRegistered events.
 * CPU per event counts this process and the PostgreSQL backends doing the work.
 */
const MESSAGES = Number(process.env.BENCH_COMPONENT_MESSAGES ?? 200_000);
const DEVICES = 1000;
// Messages per append and appends at once; the service's own are READINGS_BATCH_MAX_MESSAGES (500) and 4.
const READINGS_BATCH = Number(process.env.BENCH_APPEND_MESSAGES ?? 200);
const WRITERS = Number(process.env.BENCH_APPEND_WRITERS ?? 4);
// The service's own batch size (PROJECTION_BATCH_SIZE, or its default): the replay figures are then its speed.
const BATCH_SIZE = loadConfig().PROJECTION_BATCH_SIZE;
const REBUILD_DEVICES = Number(process.env.BENCH_REBUILD_DEVICES ?? 100_000);
const WORKER_APPLICATION = 'devcloud-bench-component';
const SITE = 'site_bench';

export async function componentBenchmarks(): Promise<void> {
  const db = await benchDatabase();
  const pool = createPool(db.url, { max: 8, applicationName: WORKER_APPLICATION });
  const store = new PostgresEventStore(pool, { connectionString: db.url });
  const context = { machine: machine(), postgres: db.serverVersion };
  try {
    await store.append(
      `site-${SITE}`,
      [
        {
          id: randomUUID(),
          type: 'SiteCreated',
          data: { siteId: SITE, projectId: 'prj_bench', name: 'Bench', timezone: 'Europe/Amsterdam' },
        },
      ],
      'no_stream',
    );
    const append = await measure(db.pool, async () => {
      let next = 0;
      const startMs = Date.now() - MESSAGES * 10;
      await Promise.all(
        Array.from({ length: WRITERS }, async () => {
          while (next < MESSAGES) {
            const first = next;
            next += READINGS_BATCH;
            const batch = Array.from({ length: Math.min(READINGS_BATCH, MESSAGES - first) }, (_, i) =>
              readingsMessage(first + i, startMs),
            );
            await store.appendBatch(batch);
          }
        }),
      );
      return MESSAGES;
    });
    ceilings.set('ingest.append', append.perSecond);
    report({
      figure: 'ingest.append.batch',
      events: MESSAGES,
      messagesPerAppend: READINGS_BATCH,
      writers: WRITERS,
      eventsPerSecond: append.perSecond,
      ...append.cpu,
      ...context,
    });

    for (const projector of [stateProjector(), telemetryProjector()]) {
      const replay = await measure(db.pool, async () => {
        await catchUpProjector(pool, store, projector, BATCH_SIZE);
        return MESSAGES;
      });
      ceilings.set(`projector.${projector.name}`, replay.perSecond);
      report({
        figure: `projector.${projector.name}.replay`,
        events: MESSAGES,
        readingsPerEvent: 3,
        batchSize: BATCH_SIZE,
        eventsPerSecond: replay.perSecond,
        ...replay.cpu,
        ...(await tableSizes(db.pool, projector)),
        ...context,
      });
    }

    await registerDevices(store);
    const devices = devicesProjector();
    const rebuild = await measure(db.pool, async () => {
      const result = await rebuildProjector(pool, store, devices, { batchSize: 5000 });
      return result.eventsApplied;
    });
    report({
      figure: 'projection.rebuild.devices',
      events: REBUILD_DEVICES,
      batchSize: 5000,
      eventsPerSecond: rebuild.perSecond,
      ...rebuild.cpu,
      ...context,
    });
  } finally {
    await store.close();
    await pool.end();
    await db.drop();
  }
}

/** Runs `work` (which returns how many events it handled) under a CPU meter. */
async function measure(benchPool: Pool, work: () => Promise<number>) {
  const meter = new CpuMeter(benchPool, () => {
    const { user, system } = process.cpuUsage();
    return user + system;
  }, [BENCH_APPLICATION]);
  await meter.start();
  const started = performance.now();
  const events = await work();
  const seconds = (performance.now() - started) / 1000;
  const used = await meter.stop();
  return {
    perSecond: Math.round(events / seconds),
    cpu: {
      cpuMicrosecondsPerEvent: round((used.processUs + used.postgresUs) / events, 1),
      nodeMicrosecondsPerEvent: round(used.processUs / events, 1),
      postgresMicrosecondsPerEvent: round(used.postgresUs / events, 1),
      machineBusyShare: used.machineBusyShare,
    },
  };
}

const CAPABILITIES = ['environment.temperature', 'electrical.energy_import', 'binary.switch'] as const;

/**
 * Message i: device i mod DEVICES, one reading of each capability, ten seconds after the device's previous
 * message; one message in 50 arrives with a device time 90 s in the past (late), as skewed clocks do.
 */
function readingsMessage(i: number, startMs: number): BatchEntry {
  const device = i % DEVICES;
  const deviceId = `dev_bench${device.toString(36).padStart(5, '0')}`;
  const atMs = startMs + Math.floor(i / DEVICES) * 10_000 + device;
  const deviceMs = i % 50 === 0 ? atMs - 90_000 : atMs;
  const deviceTime = new Date(deviceMs).toISOString();
  return {
    streamName: readingsStreamName(deviceId),
    event: {
      id: randomUUID(),
      type: 'ReadingsRecorded',
      data: {
        deviceId,
        projectId: 'prj_bench',
        siteId: SITE,
        agentId: 'agt_bench',
        seq: i,
        receivedAt: new Date(atMs).toISOString(),
        readings: [
          { capability: CAPABILITIES[0], value: 20 + (i % 70) / 10, deviceTime },
          { capability: CAPABILITIES[1], value: Math.floor(i / DEVICES) * 5 + device, deviceTime },
          { capability: CAPABILITIES[2], value: i % 3 === 0, deviceTime },
        ],
      },
    },
  };
}

async function registerDevices(store: PostgresEventStore): Promise<void> {
  for (let first = 0; first < REBUILD_DEVICES; first += 1000) {
    const entries: BatchEntry[] = [];
    for (let i = first; i < Math.min(first + 1000, REBUILD_DEVICES); i++) {
      const deviceId = `dev_r${i.toString(36).padStart(7, '0')}`;
      entries.push({
        streamName: `device-${deviceId}`,
        event: {
          id: randomUUID(),
          type: 'DeviceRegistered',
          data: {
            deviceId,
            projectId: `prj_${i % 10}`,
            siteId: SITE,
            parentHubId: 'dev_hub00001',
            kind: 'device',
            manufacturer: 'IKEA of Sweden',
            productModel: 'TRADFRI bulb E27',
            capabilities: ['binary.switch', 'system.rssi'],
            profile: 'verified',
          },
        },
      });
    }
    await store.appendBatch(entries);
  }
}

/**
 * Rows in each of the projector's tables, counted (statistics say 0 for a partitioned table: its rows are
 * in its partitions). Table names come from the projector's own list, never from input.
 */
async function tableSizes(pool: Pool, projector: Projector) {
  const rows: Record<string, number> = {};
  for (const table of projector.tables) {
    const { rows: counted } = await pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM ${pg.escapeIdentifier(table)}`,
    );
    rows[table] = Number(counted[0]!.n);
  }
  return { rows };
}
