import http, { type Server } from 'node:http';
import { createApiApp } from '../src/api/app.js';
import { loadConfig } from '../src/config.js';
import { setDeviceProfile } from '../src/control/device-admin.js';
import { setCapabilityGrant } from '../src/control/grants.js';
import { PostgresEventStore } from '../src/eventstore/postgres/adapter.js';
import { createLogger } from '../src/infra/logger.js';
import { createMetrics } from '../src/infra/metrics.js';
import { deviceOf, siteOf } from '../tests/support/registry.js';
import { projectWithClient, requestToken } from '../tests/support/tenants.js';
import { benchDatabase, machine, report } from './support.js';

/**
 * Accepted commands per second through POST /v1/devices/{publicId}/commands with a real token: each request
 * decides the safety gate on the device's stream and claims its idempotency key in the same append. Offered
 * by BENCH_COMMAND_CONCURRENCY clients in a closed loop over BENCH_COMMAND_DEVICES granted S2 devices.
 * The API process alone (no projectors running beside it). CPU is this whole process (the API and the load
 * generator's HTTP client both); PostgreSQL's is not counted.
 */
const COMMANDS = Number(process.env.BENCH_COMMANDS ?? 5000);
const DEVICES = Number(process.env.BENCH_COMMAND_DEVICES ?? 200);
const CONCURRENCY = Number(process.env.BENCH_COMMAND_CONCURRENCY ?? 16);
const WARM_UP = 200;

export async function commandBenchmarks(): Promise<void> {
  const db = await benchDatabase();
  const store = new PostgresEventStore(db.pool, { connectionString: db.url });
  let server: Server | undefined;
  let agent: http.Agent | undefined;
  try {
    const { projectId, client } = await projectWithClient(store, db.pool, ['commands:write'], {
      name: 'bench',
    });
    const siteId = await siteOf({ store }, projectId, 'Berlin', 'Europe/Berlin');
    const devices: string[] = [];
    for (let i = 0; i < DEVICES; i++) {
      const deviceId = await deviceOf({ store }, projectId, siteId, {
        productModel: 'R2',
        capabilities: ['actuator.relay'],
      });
      const now = new Date();
      await setDeviceProfile(store, { deviceId, profile: 'verified', now });
      await setCapabilityGrant(store, {
        projectId,
        clientId: client.clientId,
        deviceId,
        capabilityKey: 'actuator.relay',
        write: true,
        now,
      });
      devices.push(deviceId);
    }

    const config = loadConfig({
      DATABASE_URL: db.url,
      LOG_LEVEL: 'silent',
      RATE_LIMIT_PER_SECOND: '1000000',
      RATE_LIMIT_BURST: '1000000',
    });
    const app = createApiApp({
      config,
      logger: createLogger('silent'),
      metrics: createMetrics(),
      pool: db.pool,
      store,
    });
    server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    const address = server.address();
    const baseUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    const token = await requestToken(baseUrl, client, 'post', undefined);

    // node:http with keep-alive rather than fetch: the load generator shares the two cores with the API, and
    // undici's fetch cost about as much CPU per request as the API's own routing.
    const keepAlive = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    agent = keepAlive;
    let sent = 0;
    const send = async (i: number): Promise<number> => {
      const deviceId = devices[i % devices.length]!;
      const t0 = process.hrtime.bigint();
      const status = await postJson(keepAlive, `${baseUrl}/v1/devices/${deviceId}/commands`, {
        headers: { Authorization: `Bearer ${token}`, 'Idempotency-Key': `bench-${i}` },
        body: {
          capabilityKey: 'actuator.relay',
          value: i % 2 === 0,
          mode: 'imperative',
          ttlSeconds: 60,
          confirm: true,
        },
      });
      if (status !== 201) throw new Error(`command ${i}: HTTP ${status}`);
      return Number(process.hrtime.bigint() - t0) / 1e6;
    };
    const run = async (count: number): Promise<number[]> => {
      const latencies: number[] = [];
      const end = sent + count;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (sent < end) latencies.push(await send(sent++));
        }),
      );
      return latencies;
    };

    await run(WARM_UP);
    const cpu0 = process.cpuUsage();
    const started = process.hrtime.bigint();
    const latencies = await run(COMMANDS);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const cpu = process.cpuUsage(cpu0);
    latencies.sort((a, b) => a - b);
    report({
      figure: 'commands.accept.http',
      commands: latencies.length,
      devices: DEVICES,
      concurrency: CONCURRENCY,
      acceptedPerSecond: Math.round(latencies.length / seconds),
      p50Ms: percentile(latencies, 0.5),
      p99Ms: percentile(latencies, 0.99),
      processCpuMicrosPerCommand: Math.round((cpu.user + cpu.system) / latencies.length),
      projectors: 'not running',
      machine: machine(),
      postgres: db.serverVersion,
      adapter: 'postgres',
    });
  } finally {
    agent?.destroy();
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await store.close();
    await db.drop();
  }
}

function percentile(sorted: readonly number[], p: number): number {
  const value = sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] ?? NaN;
  return Math.round(value * 100) / 100;
}

/** POSTs a JSON body and drains the answer; resolves to the status code. */
function postJson(
  agent: http.Agent,
  url: string,
  request: { headers: Record<string, string>; body: unknown },
): Promise<number> {
  const body = JSON.stringify(request.body);
  return new Promise((resolve, reject) => {
    const outgoing = http.request(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          ...request.headers,
          'Content-Type': 'application/json',
          'Content-Length': Buffer.byteLength(body),
        },
      },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
        response.on('error', reject);
      },
    );
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}
