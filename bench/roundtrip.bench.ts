import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { agentFilesFor } from '../src/agents/agent-files.js';
import { registerAgent } from '../src/agents/register.js';
import { loadConfig } from '../src/config.js';
import type { ApplyCommand } from '../src/edge-sim/commands.js';
import { EdgeSim } from '../src/edge-sim/index.js';
import { deviceStreamName } from '../src/domain/devices/decider.js';
import { createLogger } from '../src/infra/logger.js';
import { loadOrCreateAuthority } from '../src/ingress/pki/authority.js';
import { findAgent } from '../src/projections/agents/queries.js';
import { createSite } from '../src/registry/sites.js';
import { startService } from '../src/runtime/service.js';
import { adoptSimulatedFleet } from '../tests/support/edge-agent.js';
import { freePort } from '../src/infra/ports.js';
import { projectWithClient, requestToken } from '../tests/support/tenants.js';
import { benchDatabase, benchDirectory, machine, report } from './support.js';

/**
 * The command round trip, one command at a time: POST /v1/devices/{id}/commands through the API, the
 * ingress sends it over mTLS MQTT to the reference agent, which applies it and reports the new value as a
 * reading, and the state read model shows it (what GET /v1/devices/{id}/state answers). Figures: latency
 * from the POST to the agent applying it, and to the new state being visible, p50/p99; and CPU time of this
 * process (API, ingress, projectors, scheduler and the agent; PostgreSQL not included) per round trip.
 */
const ROUND_TRIPS = Number(process.env.BENCH_ROUNDTRIPS ?? 300);
const WARMUP = 20;
const STATE = `SELECT value, server_time FROM device_state WHERE device_id = $1 AND capability = 'binary.switch'`;

export async function roundTripBenchmarks(): Promise<void> {
  const db = await benchDatabase();
  const scratch = await benchDirectory('devcloud-bench-rt-');
  const dataDir = scratch.path;
  const port = await freePort();
  const logger = createLogger('warn', process.stderr);
  const config = loadConfig({
    DATABASE_URL: db.url,
    DATA_DIR: dataDir,
    MQTT_PORT: String(port),
    MQTT_HOST: '127.0.0.1',
    HTTP_PORT: '0',
    HTTP_HOST: '127.0.0.1',
    RATE_LIMIT_PER_SECOND: '100000',
    RATE_LIMIT_BURST: '100000',
    LOG_LEVEL: 'warn',
  });
  const service = await startService(config, logger);
  const { store } = service;
  const baseUrl = `http://127.0.0.1:${service.httpPort}`;
  let sim: EdgeSim | undefined;
  try {
    const { projectId, client } = await projectWithClient(
      store,
      db.pool,
      ['commands:write', 'commands:read', 'devices:read', 'grants:admin'],
      { name: 'bench' },
    );
    const token = await requestToken(baseUrl, client, 'post', undefined);
    const { siteId } = await createSite(store, { projectId, name: 'Bench', timezone: 'Europe/Amsterdam' });
    const authority = await loadOrCreateAuthority(path.join(dataDir, 'pki'));
    const agent = await registerAgent(store, authority, { projectId, siteId });
    const files = agentFilesFor(agent, authority.certificatePem, `mqtts://127.0.0.1:${port}`);
    // Device 1 of the simulated fleet is a smart plug (binary.switch, S1).
    // The broker admits the agent once the agents read model knows it.
    await poll(async () => ((await findAgent(db.pool, agent.agentId)) ? true : undefined));
    sim = new EdgeSim({ files, devices: 2, rate: 0.1, seed: 3, hubReadings: false });
    const connected = once(sim, 'connected');
    sim.start();
    await connected;
    await adoptSimulatedFleet(store, { projectId, hubId: agent.hubId, seed: 3, devices: 2, now: new Date() });
    const plug = await poll(
      () => sim!.fleet().find((d) => d.capabilities.includes('binary.switch'))?.publicId,
    );
    const api = (method: string, route: string, body: unknown) =>
      fetch(`${baseUrl}${route}`, {
        method,
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      });
    const granted = await api('PUT', `/v1/devices/${plug}/capability-grants`, {
      capabilityKey: 'binary.switch',
      write: true,
    });
    if (!granted.ok) throw new Error(`grant refused: ${granted.status} ${await granted.text()}`);

    const applied = new Map<string, number>();
    sim.on('applied', (m: ApplyCommand) => applied.set(m.commandId, performance.now()));
    const toAgent: number[] = [];
    const toState: number[] = [];
    let cpu: NodeJS.CpuUsage | undefined;
    let startedAt = 0;
    for (let i = 0; i < WARMUP + ROUND_TRIPS; i++) {
      if (i === WARMUP) {
        cpu = process.cpuUsage();
        startedAt = performance.now();
      }
      const value = i % 2 === 0;
      const since = new Date(Date.now() - 1).toISOString();
      const t0 = performance.now();
      const answer = await api('POST', `/v1/devices/${plug}/commands`, {
        capabilityKey: 'binary.switch',
        value,
        mode: 'imperative',
        ttlSeconds: 30,
        idempotencyKey: randomUUID(),
      });
      if (answer.status !== 201) throw new Error(`command refused: ${answer.status} ${await answer.text()}`);
      const { command } = (await answer.json()) as { command: { commandId: string } };
      await poll(async () => {
        const { rows } = await db.pool.query<{ value: unknown; server_time: Date }>(STATE, [plug]);
        const row = rows[0];
        return row && row.value === value && row.server_time.toISOString() >= since ? true : undefined;
      });
      const t1 = performance.now();
      if (i < WARMUP) continue;
      toState.push(t1 - t0);
      toAgent.push((applied.get(command.commandId) ?? Number.NaN) - t0);
    }
    const used = process.cpuUsage(cpu);
    const seconds = (performance.now() - startedAt) / 1000;
    // Where the time goes: acceptance to the send being recorded (the dispatcher's wake-up and decision).
    const recorded = new Map<string, Map<string, number>>();
    for (const e of await store.readStream(deviceStreamName(plug))) {
      const { commandId } = e.data as { commandId?: string };
      if (commandId === undefined) continue;
      const steps = recorded.get(commandId) ?? new Map<string, number>();
      steps.set(e.type, e.recordedAt.getTime());
      recorded.set(commandId, steps);
    }
    const acceptedToSent = [...recorded.values()]
      .slice(WARMUP)
      .map(
        (steps) => (steps.get('CommandSent') ?? Number.NaN) - (steps.get('CommandAccepted') ?? Number.NaN),
      );
    const context = { roundTrips: ROUND_TRIPS, machine: machine(), postgres: db.serverVersion };
    report({ figure: 'commands.roundtrip.accepted_to_sent', ...percentiles(acceptedToSent), ...context });
    report({ figure: 'commands.roundtrip.api_to_agent', ...percentiles(toAgent), ...context });
    report({
      figure: 'commands.roundtrip.api_to_state',
      ...percentiles(toState),
      roundTripsPerSecond: Math.round(ROUND_TRIPS / seconds),
      // This process only (API, ingress, projectors, scheduler, agent, and the polling below); not PostgreSQL.
      cpuMicrosecondsPerRoundTrip: Math.round((used.user + used.system) / ROUND_TRIPS),
      ...context,
    });
  } finally {
    await sim?.stop(1000);
    await service.stop();
    await db.drop();
    await scratch.remove();
  }
}

function percentiles(samples: number[]) {
  const sorted = samples.filter(Number.isFinite).sort((a, b) => a - b);
  const at = (q: number) => round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]);
  return { samples: sorted.length, p50Ms: at(0.5), p99Ms: at(0.99), maxMs: round(sorted.at(-1)) };
}

function round(ms: number | undefined): number | null {
  return ms === undefined ? null : Math.round(ms * 10) / 10;
}

/** Polls every 2 ms until `probe` answers, for at most 30 s. */
async function poll<T>(probe: () => T | undefined | Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out');
    await sleep(2);
  }
}
