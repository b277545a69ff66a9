import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { Role } from '../config.js';
import { EdgeSim } from '../edge-sim/index.js';
import { PostgresEventStore } from '../eventstore/postgres/adapter.js';
import type { Logger } from '../infra/logger.js';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../infra/postgres/embedded.js';
import { migrate } from '../infra/postgres/migrate.js';
import { createPool } from '../infra/postgres/pool.js';
import { catchUpProjector } from '../projections/catch-up.js';
import { devicesProjector } from '../projections/devices/projector.js';
import { stateProjector } from '../projections/state/projector.js';
import { telemetryProjector } from '../projections/telemetry/projector.js';
import { checksNotRunHere, verdict, type SoakCheck } from './checks.js';
import { MessageLedger } from './ledger.js';
import { freePort } from '../infra/ports.js';
import { provisionSimulatedAgent } from './provision.js';
import { checkReadings, type ReadingsReport } from './readings-check.js';
import { compareWithReplay } from './replay-check.js';
import { ServiceProcess } from './service-process.js';
import { projectorsCaughtUp, simulatorDrained, waitFor } from './settle.js';

export const SOAK_ROLES: readonly Role[] = ['api', 'ingress', 'projector', 'scheduler'];

export interface SoakOptions {
  readonly minutes: number;
  readonly kills: number;
  readonly seed: number;
  readonly devices: number;
  /** Readings per second per simulated device. */
  readonly rate: number;
  /** A PostgreSQL server to create the soak's own database on; else an embedded cluster in a temp dir. */
  readonly serverUrl?: string;
  readonly logger: Logger;
  /** Aborting stops the soak early; the finally block still kills the roles and removes what it made. */
  readonly signal?: AbortSignal;
}

export interface SoakReport {
  readonly soak: 'devcloud';
  readonly ok: boolean;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly minutes: number;
  readonly seed: number;
  readonly machine: {
    cpus: number;
    cpuModel: string;
    memoryGiB: number;
    node: string;
    loadAverage: number[];
  };
  readonly database: 'embedded' | 'server';
  readonly kills: {
    readonly total: number;
    readonly asked: number;
    readonly byRole: Record<string, number>;
    /** Kills that landed before the process had logged that it started (during start-up). */
    readonly duringStartup: number;
  };
  readonly starts: number;
  readonly readings: Omit<ReadingsReport, 'examples'>;
  readonly replayedTables: number;
  readonly checks: readonly SoakCheck[];
  readonly examples: ReadingsReport['examples'];
}

/**
 * Runs the service as one child process per role with the reference agent publishing QoS 1 readings,
 * SIGKILLs a random role at `kills` random moments spread over `minutes`, restarting each at once, then
 * lets everything settle and checks the invariants: acknowledged = stored = projected readings, none twice,
 * read models equal to a clean replay. Loopback only; bounded by `minutes` plus a few minutes to settle.
 */
export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const log = options.logger;
  const startedAt = new Date();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'devcloud-soak-'));
  // An embedded cluster run as root belongs to the postgres user, who must be able to reach its directory.
  await chmod(dataDir, 0o755);
  const database = await openSoakDatabase(dataDir, options);
  const pool = createPool(database.url, { max: 6, applicationName: 'devcloud-soak' });
  const store = new PostgresEventStore(pool, { connectionString: database.url, idlePollMs: 100 });
  const roles = new Map<Role, ServiceProcess>();
  let sim: EdgeSim | undefined;
  try {
    await migrate(pool);
    const mqttPort = await freePort();
    const { files } = await provisionSimulatedAgent(store, {
      dataDir,
      brokerUrl: `mqtts://127.0.0.1:${mqttPort}`,
      seed: options.seed,
      devices: options.devices,
    });
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: database.url,
      DATA_DIR: dataDir,
      MQTT_PORT: String(mqttPort),
      MQTT_HOST: '127.0.0.1',
      HTTP_PORT: String(await freePort()),
      HTTP_HOST: '127.0.0.1',
      PROJECTION_BATCH_SIZE: '500',
      LOG_LEVEL: 'info',
    };
    for (const role of SOAK_ROLES) roles.set(role, new ServiceProcess([role], env));
    for (const p of roles.values()) p.start();

    sim = new EdgeSim({
      files,
      devices: options.devices,
      rate: options.rate,
      seed: options.seed,
      backoff: { initialMs: 100, maxMs: 1000 },
      // The agent keeps everything while roles restart: a full queue would drop readings, not lose them.
      queueLimit: 1_000_000,
    });
    const ledger = new MessageLedger().attach(sim);
    sim.start();

    // Kills come at random gaps averaging minutes/kills. Nine in ten hit a random role among those that are
    // up (a crash in the middle of its work); one in ten hits any role, perhaps one still starting (a crash
    // in its migrations or set-up). A killed role is started again at once, as a supervisor would. On a slow
    // machine fewer kills than asked may fit in the minutes: the report says how many landed.
    const runMs = options.minutes * 60_000;
    const meanGapMs = runMs / Math.max(1, options.kills);
    const deadline = Date.now() + runMs;
    const killsByRole: Record<string, number> = Object.fromEntries(SOAK_ROLES.map((r) => [r, 0]));
    let kills = 0;
    let duringStartup = 0;
    let lastProgress = Date.now();
    while (kills < options.kills && Date.now() < deadline) {
      await sleep(Math.min(Math.random() * 2 * meanGapMs, Math.max(0, deadline - Date.now())), undefined, {
        signal: options.signal,
      });
      const anyRole = Math.random() < 0.1;
      const someUp =
        anyRole || (await waitFor(() => SOAK_ROLES.some((r) => roles.get(r)!.ready), deadline - Date.now()));
      if (!someUp) break;
      const up = SOAK_ROLES.filter((r) => roles.get(r)!.ready);
      const candidates = anyRole || up.length === 0 ? SOAK_ROLES : up;
      const role = candidates[Math.floor(Math.random() * candidates.length)]!;
      const target = roles.get(role)!;
      if (!target.ready) duringStartup += 1;
      await target.kill();
      kills += 1;
      killsByRole[role]! += 1;
      target.start();
      if (Date.now() - lastProgress > 30_000) {
        lastProgress = Date.now();
        log.info({ kills, of: options.kills, acked: ledger.acknowledged(), duringStartup }, 'soak progress');
      }
    }
    const remaining = deadline - Date.now();
    if (remaining > 0) await sleep(remaining, undefined, { signal: options.signal });

    log.info('kills done: letting the service settle');
    const allReady = await waitFor(() => [...roles.values()].every((p) => p.ready), 180_000);
    const drained = await simulatorDrained(sim, 180_000);
    const simStats = await sim.stop(5000);
    sim = undefined;
    const projectors = [stateProjector(), telemetryProjector(), devicesProjector()];
    const caughtUp = await projectorsCaughtUp(pool, store, projectors, 180_000);
    for (const p of roles.values()) await p.stop();
    for (const projector of projectors) await catchUpProjector(pool, store, projector);

    const readings = await checkReadings(pool, store, ledger);
    const comparisons = await compareWithReplay(pool, store, projectors);
    const differing = comparisons.filter((c) => !c.equal);
    const checks: SoakCheck[] = [
      verdict(
        'service settled after the last kill',
        allReady && drained && caughtUp,
        `all roles up: ${allReady}, agent queue drained: ${drained}, projectors at the head: ${caughtUp}`,
      ),
      verdict(
        'acknowledged readings are stored',
        readings.lost === 0 && readings.altered === 0 && readings.unknown === 0,
        `${readings.messagesAcked} messages acknowledged, ${readings.lost} lost, ${readings.altered} altered, ` +
          `${readings.unknown} stored that the agent never sent`,
      ),
      verdict(
        'no reading stored twice',
        readings.duplicated === 0,
        `${readings.duplicated} (device, seq) stored more than once; ${readings.redeliveredAfterStored} ` +
          'redeliveries of already stored messages',
      ),
      verdict(
        'stored readings are projected exactly once',
        readings.projectionMissing === 0 &&
          readings.projectionExtra === 0 &&
          readings.readingsProjected === readings.readingsStored,
        `${readings.readingsStored} stored, ${readings.readingsProjected} in telemetry_raw, ` +
          `${readings.projectionMissing} missing, ${readings.projectionExtra} extra`,
      ),
      verdict(
        'read models equal a clean replay',
        differing.length === 0,
        differing.length === 0
          ? `${comparisons.length} tables of state, telemetry and devices equal`
          : `differ: ${differing.map((c) => `${c.table} (live ${c.liveRows}, replay ${c.replayedRows})`).join(', ')}; ` +
              `first rows only live: ${JSON.stringify(differing.map((c) => c.onlyLive[0]))}, only replayed: ` +
              JSON.stringify(differing.map((c) => c.onlyReplayed[0])),
      ),
      verdict(
        'the agent dropped nothing',
        simStats.dropped === 0,
        `${simStats.dropped} dropped from its queue`,
      ),
      ...checksNotRunHere(),
    ];
    const { examples, ...counts } = readings;
    const finishedAt = new Date();
    return {
      soak: 'devcloud',
      ok: checks.every((c) => c.status !== 'failed'),
      startedAt: startedAt.toISOString(),
      finishedAt: finishedAt.toISOString(),
      minutes: Math.round((finishedAt.getTime() - startedAt.getTime()) / 600) / 100,
      seed: options.seed,
      machine: {
        cpus: os.cpus().length,
        cpuModel: os.cpus()[0]?.model ?? 'unknown',
        memoryGiB: Math.round(os.totalmem() / 2 ** 30),
        node: process.version,
        loadAverage: os.loadavg().map((l) => Math.round(l * 10) / 10),
      },
      database: database.kind,
      kills: { total: kills, asked: options.kills, byRole: killsByRole, duringStartup },
      starts: [...roles.values()].reduce((n, p) => n + p.starts, 0),
      readings: counts,
      replayedTables: comparisons.length,
      checks,
      examples,
    };
  } finally {
    await sim?.stop(0);
    for (const p of roles.values()) await p.kill();
    await store.close();
    await pool.end();
    await database.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

interface SoakDatabase {
  readonly kind: 'embedded' | 'server';
  readonly url: string;
  close(): Promise<void>;
}

/** The soak's own database: a fresh one on `serverUrl`, or an embedded cluster isolated in `dataDir`. */
async function openSoakDatabase(dataDir: string, options: SoakOptions): Promise<SoakDatabase> {
  if (options.serverUrl) {
    const name = `soak_${randomBytes(5).toString('hex')}`;
    const admin = async (sql: string) => {
      const client = new pg.Client({ connectionString: options.serverUrl });
      await client.connect();
      try {
        await client.query(sql);
      } finally {
        await client.end();
      }
    };
    await admin(`CREATE DATABASE ${name}`);
    const url = new URL(options.serverUrl);
    url.pathname = `/${name}`;
    return {
      kind: 'server',
      url: url.toString(),
      close: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
    };
  }
  const embedded: EmbeddedDatabase = await startEmbeddedPostgres({
    dataDir: path.join(dataDir, 'pg'),
    port: await freePort(),
    logger: options.logger,
  });
  return { kind: 'embedded', url: embedded.url, close: () => embedded.stop() };
}
