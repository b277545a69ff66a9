import { createHash, randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { Role } from '../../src/config.js';
import { EdgeSim } from '../../src/edge-sim/index.js';
import { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import type { Logger } from '../../src/infra/logger.js';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/infra/postgres/embedded.js';
import { migrate } from '../../src/infra/postgres/migrate.js';
import { EVENT_STORE_FUNCTIONS } from '../../src/eventstore/postgres/functions/install-order.js';
import { createPool } from '../../src/infra/postgres/pool.js';
import { createClient } from '../../src/identity/clients.js';
import { ClientSecretHasher } from '../../src/identity/secret-hash.js';
import { catchUpProjector } from '../../src/projections/catch-up.js';
import { devicesProjector } from '../../src/projections/devices/projector.js';
import { stateProjector } from '../../src/projections/state/projector.js';
import { telemetryProjector } from '../../src/projections/telemetry/projector.js';
import { checkAuditHistory } from './audit-check.js';
import { verdict, type SoakCheck } from './checks.js';
import { CommandDriver, SOAK_COMMAND_TTL_SECONDS } from './command-driver.js';
import {
  actedAtMostOnce,
  commandsAtRest,
  judgeCommands,
  recordedCommands,
  type CommandsReport,
} from './commands-check.js';
import { MessageLedger } from './ledger.js';
import { FrameIds } from '../../src/api/live/frame-id.js';
import { cursorKeys } from '../../src/api/pagination/cursor-keys.js';
import { compareLiveFrames, framesInStore, sawNoGap, type LiveComparison } from './live-check.js';
import { LiveFollowers, type LiveFollowerCounts } from './live-followers.js';
import { freePort } from '../../src/infra/ports.js';
import { provisionSimulatedAgent } from './provision.js';
import { checkReadings, type ReadingsReport } from './readings-check.js';
import { compareWithReplay } from './replay-check.js';
import { ServiceProcess } from './service-process.js';
import { SoakApi } from './soak-api.js';
import { projectorsCaughtUp, simulatorDrained, waitFor } from './settle.js';

const SOAK_ROLES: readonly Role[] = ['api', 'ingress', 'projector', 'scheduler'];

/** SSE clients following the live stream through the kills. */
const SOAK_LIVE_CLIENTS = 3;
/** A command to the smart plug this often. */
const SOAK_COMMAND_INTERVAL_MS = 2000;
/** How long the roles may take to start, and the service to settle after the kills. */
const START_MS = 180_000;
const SETTLE_MS = 180_000;

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
  /**
   * Paced by the work rather than the clock: each kill comes once the service is back from the one before
   * (every role up, every live client following again) and up to 2 s later, and the run ends when the kills
   * have all landed, or at `minutes` at the latest. One kill in ten still comes at once, so it may land on a
   * role still starting. For a short run that must exercise its faults (tests/soak/soak.test.ts).
   */
  readonly untilKilled?: boolean;
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
  /** The SSE clients: their connections and what they received, compared with the store. */
  readonly live: LiveFollowerCounts & Omit<LiveComparison, 'mismatches'> & { caughtUp: boolean };
  /** The commands to the smart plug: keys, answers, statuses, and what the agent received and applied. */
  readonly commands: Omit<CommandsReport, 'examples'> & {
    readonly ttlSeconds: number;
    /** Every command answered before the soak ended, and none left queued or applied without an outcome. */
    readonly answered: boolean;
    readonly atRest: boolean;
  };
  readonly checks: readonly SoakCheck[];
  readonly examples: Readonly<Record<string, readonly unknown[]>>;
}

/**
 * Runs the service as one child process per role with the reference agent publishing QoS 1 readings, SSE
 * clients following the live stream and a client switching the agent's smart plug, SIGKILLs a random role at
 * `kills` random moments spread over `minutes`, restarting each at once, then lets everything settle and
 * checks the invariants: acknowledged = stored = projected readings, none twice, read models equal to a
 * clean replay, every live client's frames exactly the store's, every command recorded once per idempotency
 * key and acted on at most once. Loopback only; bounded by `minutes` plus a few minutes to start and settle.
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
  // Stops the soak's own clients (and their retries) whichever way the soak ends.
  const clients = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, clients.signal]) : clients.signal;
  let sim: EdgeSim | undefined;
  let followers: LiveFollowers | undefined;
  try {
    await migrate(pool, EVENT_STORE_FUNCTIONS);
    const mqttPort = await freePort();
    const { projectId, files } = await provisionSimulatedAgent(store, {
      dataDir,
      brokerUrl: `mqtts://127.0.0.1:${mqttPort}`,
      seed: options.seed,
      devices: options.devices,
    });
    const client = await createClient(store, new ClientSecretHasher(pool), {
      projectId,
      scopes: ['telemetry:live', 'commands:write', 'grants:admin'],
      authMethod: 'post',
      name: 'soak',
    });
    const httpPort = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: database.url,
      DATA_DIR: dataDir,
      MQTT_PORT: String(mqttPort),
      MQTT_HOST: '127.0.0.1',
      HTTP_PORT: String(httpPort),
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

    // The kills start once everything runs: the roles, the agent with its plug known, the grant to switch
    // it, and the live clients with a stream open, so that the first kill of a role already cuts something.
    const started = await waitFor(() => [...roles.values()].every((p) => p.ready), START_MS);
    if (!started) throw new Error(`the roles did not start: ${startFailures(roles)}`);
    const plugKnown = await waitFor(() => plugOf(sim!) !== undefined, START_MS);
    if (!plugKnown)
      throw new Error('the agent learnt no public id for its smart plug (--devices must be 2 or more)');
    const plugId = plugOf(sim)!;
    const api = new SoakApi(`http://127.0.0.1:${httpPort}`, client, signal);
    const grant = await api
      .untilAnswered(
        'PUT',
        `/v1/devices/${plugId}/capability-grants`,
        { capabilityKey: 'binary.switch', write: true },
        { signal: AbortSignal.timeout(START_MS) },
      )
      .catch((error: Error) => ({ status: 0, body: error.message, attempts: 0 }));
    if (grant.status !== 200) throw new Error(`the plug's grant failed: ${JSON.stringify(grant)}`);
    followers = new LiveFollowers(api, SOAK_LIVE_CLIENTS, digest);
    followers.start();
    const commands = new CommandDriver(api, sim, plugId, { intervalMs: SOAK_COMMAND_INTERVAL_MS });
    commands.start();
    if (!(await waitFor(() => followers!.following === SOAK_LIVE_CLIENTS, START_MS)))
      throw new Error(`the live clients did not connect: ${followers.errors.join('; ')}`);

    // Kills come at random gaps averaging minutes/kills. The first ones hit every role once (in random
    // order, each while it is up), so even a short soak kills the api under the live clients and the
    // ingress under the commands. After that, nine in ten hit a random role among those that are up (a crash
    // in the middle of its work); one in ten hits any role, perhaps one still starting (a crash in its
    // migrations or set-up). A killed role is started again at once, as a supervisor would. On a slow
    // machine fewer kills than asked may fit in the minutes: the report says how many landed. With
    // untilKilled the gaps are the service's recovery plus up to 2 s instead, and the run ends at the last kill.
    const runMs = options.minutes * 60_000;
    const meanGapMs = runMs / Math.max(1, options.kills);
    const deadline = Date.now() + runMs;
    const killsByRole: Record<string, number> = Object.fromEntries(SOAK_ROLES.map((r) => [r, 0]));
    let kills = 0;
    let duringStartup = 0;
    let lastProgress = Date.now();
    const recovered = () =>
      SOAK_ROLES.every((r) => roles.get(r)!.ready) && followers!.following === SOAK_LIVE_CLIENTS;
    while (kills < options.kills && Date.now() < deadline) {
      const anyRole = Math.random() < 0.1;
      // Paced by the work (untilKilled): the service is back from the kill before, unless this one may hit
      // a role still starting.
      const waitForRecovery = options.untilKilled && !anyRole;
      if (waitForRecovery && !(await waitFor(recovered, Math.max(0, deadline - Date.now())))) break;
      const gapMs = options.untilKilled ? Math.random() * 2000 : Math.random() * 2 * meanGapMs;
      await sleep(Math.min(gapMs, Math.max(0, deadline - Date.now())), undefined, { signal: options.signal });
      const someUp =
        anyRole || (await waitFor(() => SOAK_ROLES.some((r) => roles.get(r)!.ready), deadline - Date.now()));
      if (!someUp) break;
      const up = SOAK_ROLES.filter((r) => roles.get(r)!.ready);
      const unhit = up.filter((r) => killsByRole[r] === 0);
      const candidates = unhit.length > 0 ? unhit : anyRole || up.length === 0 ? SOAK_ROLES : up;
      const role = candidates[Math.floor(Math.random() * candidates.length)]!;
      const target = roles.get(role)!;
      if (!target.ready) duringStartup += 1;
      await target.kill();
      kills += 1;
      killsByRole[role]! += 1;
      target.start();
      if (Date.now() - lastProgress > 30_000) {
        lastProgress = Date.now();
        log.info(
          {
            kills,
            of: options.kills,
            acked: ledger.acknowledged(),
            duringStartup,
            commands: commands.ledger.sent.length,
            liveReconnects: followers.counts.reconnects,
          },
          'soak progress',
        );
      }
    }
    const remaining = deadline - Date.now();
    if (remaining > 0 && !options.untilKilled) await sleep(remaining, undefined, { signal: options.signal });

    log.info('kills done: letting the service settle');
    const allReady = await waitFor(() => [...roles.values()].every((p) => p.ready), SETTLE_MS);
    // The last command gets its answer; those still to be sent reach the agent, which acts on them.
    const commandsAnswered = await commands.finish(SETTLE_MS);
    const drained = await simulatorDrained(sim, SETTLE_MS);
    const atRest = await waitFor(() => commandsAtRest(store, commands.ledger), 60_000);
    const simStats = await sim.stop(5000);
    sim = undefined;
    const projectors = [stateProjector(), telemetryProjector(), devicesProjector()];
    const caughtUp = await projectorsCaughtUp(pool, store, projectors, SETTLE_MS);
    // Ingest has stopped: each live client catches up to the store's last telemetry frame. Read again once
    // they have, in case a frame became visible in the store meanwhile.
    const ids = await FrameIds.load(cursorKeys(pool));
    let expected = await framesInStore(store, ids, projectId, ['telemetry'], digest);
    const liveCaughtUp = await waitFor(async () => {
      if (!followers!.reached(expected.at(-1)?.id)) return false;
      const again = await framesInStore(store, ids, projectId, ['telemetry'], digest);
      const settled = again.at(-1)?.id === expected.at(-1)?.id;
      expected = again;
      return settled;
    }, SETTLE_MS);
    await followers.stop();
    for (const p of roles.values()) await p.stop();
    for (const projector of projectors) await catchUpProjector(pool, store, projector);

    const audited = await checkAuditHistory(pool, store);
    const readings = await checkReadings(pool, store, ledger);
    const comparisons = await compareWithReplay(pool, store, projectors);
    const differing = comparisons.filter((c) => !c.equal);
    const { mismatches, ...live } = compareLiveFrames(followers.received, expected);
    const liveCounts = followers.counts;
    const { examples: commandExamples, ...commanded } = judgeCommands(
      commands.ledger,
      await recordedCommands(store, plugId),
    );
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
      verdict(
        'live stream clients saw no gap',
        liveCaughtUp && sawNoGap(live) && liveCounts.replayGaps === 0 && followers.errors.length === 0,
        `${live.clients} clients, ${live.framesCompared} frames compared with the store's ` +
          `(${expected.length} telemetry frames in all); ${liveCounts.reconnects} reconnects ` +
          `(${liveCounts.lostConnections} streams cut by kills, ${sum(liveCounts.serverEnds)} ended by the ` +
          `server, ${liveCounts.refusedConnections} connections refused); caught up: ${liveCaughtUp}; ` +
          `${live.gaps} gaps, ${live.duplicates} duplicates, ${live.outOfOrder} out of order, ` +
          `${live.unknown} unknown, ${live.altered} altered, ${liveCounts.replayGaps} replay_gap` +
          (followers.errors.length > 0 ? `; errors: ${followers.errors.slice(0, 3).join('; ')}` : ''),
      ),
      verdict(
        'commands acted at most once',
        actedAtMostOnce(commanded),
        `${commanded.keys} idempotency keys (${commanded.retriedKeys} sent more than once, ` +
          `${commanded.requests} requests; ${commanded.accepted} accepted, ${commanded.refused} refused, ` +
          `${commanded.unanswered} unanswered), ${commanded.recorded} commands recorded ` +
          `(${Object.entries(commanded.byStatus)
            .map(([status, n]) => `${n} ${status}`)
            .join(', ')}); the agent received ${commanded.delivered} and applied ${commanded.applied}; ` +
          `${commanded.keysWithoutCommand} keys without their command, ${commanded.keysWithSeveralCommands} ` +
          `with several, ${commanded.strayCommands} stray, ${commanded.recordedTwice} accepted or sent twice, ` +
          `${commanded.deliveredTwice} received twice, ${commanded.appliedTwice} applied twice, ` +
          `${commanded.appliedUnknown} applied unknown, ${commanded.succeededUnapplied} succeeded unapplied`,
      ),
      audited,
    ];
    const { examples, ...counts } = readings;
    const finishedAt = new Date();
    return {
      soak: 'devcloud',
      ok: checks.every((c) => c.status === 'passed'),
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
      live: { ...liveCounts, ...live, caughtUp: liveCaughtUp },
      commands: {
        ...commanded,
        ttlSeconds: SOAK_COMMAND_TTL_SECONDS,
        atRest,
        answered: commandsAnswered,
      },
      checks,
      examples: {
        ...examples,
        ...commandExamples,
        ...(mismatches.length > 0 ? { liveMismatches: mismatches } : {}),
      },
    };
  } finally {
    clients.abort();
    await followers?.stop();
    await sim?.stop(0);
    for (const p of roles.values()) await p.kill();
    await store.close();
    await pool.end();
    await database.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** The simulated smart plug's public id, once the agent has learnt it (device 1 of the fleet is a plug). */
function plugOf(sim: EdgeSim): string | undefined {
  return sim.fleet().find((d) => d.capabilities.includes('binary.switch'))?.publicId;
}

/**
 * What the soak keeps of a live frame's data: a digest (a long soak's clients receive millions of frames);
 * the store's frames are reduced the same way for the comparison.
 */
function digest(data: string): string {
  return createHash('sha256').update(data).digest('base64url').slice(0, 22);
}

function sum(counts: Readonly<Record<string, number>>): number {
  return Object.values(counts).reduce((n, c) => n + c, 0);
}

function startFailures(roles: ReadonlyMap<Role, ServiceProcess>): string {
  return [...roles]
    .filter(([, p]) => !p.ready)
    .map(([role, p]) => `${role}: ${p.stderrTail().slice(-500)}`)
    .join('; ');
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
