import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { parseSse } from '../examples/live-client/sse.js';
import { FrameIds } from '../src/api/live/frame-id.js';
import { framesOf } from '../src/api/live/frames.js';
import type { RecordedEvent } from '../src/eventstore/port.js';
import { PostgresEventStore } from '../src/eventstore/postgres/adapter.js';
import { createClient } from '../src/identity/clients.js';
import { ClientSecretHasher } from '../src/identity/secret-hash.js';
import { freePort } from '../src/infra/ports.js';
import { requestToken } from '../tests/support/tenants.js';
import { READINGS_PER_MESSAGE, WARMUP_SECONDS, provisionFleet, reply } from './ingest.bench.js';
import { undoable } from './interrupt.js';
import { benchDatabase, benchDirectory, benchWorker, machine, report } from './support.js';

/**
 * Live stream under load: STREAMS concurrent SSE streams, each following one device, while the simulated
 * fleet publishes READINGS_PER_SECOND readings over MQTT. The service runs as its own process
 * (`devcloud serve`, every role) so its memory is measured alone. Figures: delivery latency from the
 * moment the agent put the message together (its publish) to the SSE frame arriving, p50/p99 over every
 * frame of SECONDS after a warm-up; and the server's RSS sampled every 5 s over the run.
 */
const STREAMS = Number(process.env.BENCH_LIVE_STREAMS ?? 1000);
const READINGS_PER_SECOND = Number(process.env.BENCH_LIVE_READINGS ?? 1000);
const SECONDS = Number(process.env.BENCH_LIVE_SECONDS ?? 60);
const AGENTS = 2;
const DEVICES = 50;

export async function liveBenchmarks(): Promise<void> {
  frameBuildFigure();
  const db = await benchDatabase();
  const store = new PostgresEventStore(db.pool, { connectionString: db.url });
  const scratch = await benchDirectory('devcloud-bench-live-');
  const dataDir = scratch.path;
  const mqttPort = await freePort();
  const httpPort = await freePort();
  let stopServer = async () => {};
  let load: Worker | undefined;
  const streams = new AbortController();
  try {
    const { projectId, agents } = await provisionFleet(store, dataDir, mqttPort, AGENTS, DEVICES);
    const client = await createClient(store, new ClientSecretHasher(db.pool), {
      projectId,
      scopes: ['telemetry:live'],
      authMethod: 'post',
    });
    const devices = await adoptedDevices(store);
    const server = spawn(process.execPath, ['bin/devcloud.js', 'serve'], {
      env: {
        ...process.env,
        DATABASE_URL: db.url,
        DATA_DIR: dataDir,
        MQTT_PORT: String(mqttPort),
        MQTT_HOST: '127.0.0.1',
        HTTP_PORT: String(httpPort),
        HTTP_HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        RATE_LIMIT_PER_SECOND: '100000',
        RATE_LIMIT_BURST: '100000',
        LIVE_MAX_STREAMS_PER_CLIENT: String(STREAMS + 10),
        METRICS_TOKEN: SCRAPER_TOKEN,
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    stopServer = undoable(async () => {
      if (server.exitCode !== null) return;
      server.kill('SIGTERM');
      await Promise.race([once(server, 'exit'), sleep(20_000)]);
    });
    const baseUrl = `http://127.0.0.1:${httpPort}`;
    for (const deadline = Date.now() + 120_000; ;) {
      if (
        await fetch(`${baseUrl}/health`).then(
          (r) => r.ok,
          () => false,
        )
      )
        break;
      if (Date.now() > deadline) throw new Error('the service did not start');
      await sleep(200);
    }
    const token = await requestToken(baseUrl, client, 'post', undefined);

    const latencies: number[] = [];
    let measuring = false;
    let frames = 0;
    let opened = 0;
    const follow = async (deviceId: string) => {
      const response = await fetch(`${baseUrl}/v1/live?types=telemetry&deviceIds=${deviceId}`, {
        headers: { Authorization: `Bearer ${token}` },
        signal: streams.signal,
      });
      if (response.status !== 200 || !response.body) throw new Error(`stream refused: ${response.status}`);
      opened += 1;
      for await (const item of parseSse(response.body)) {
        if (item.kind !== 'event' || item.event !== 'telemetry') continue;
        frames += 1;
        if (!measuring) continue;
        const { deviceTime, quality } = JSON.parse(item.data) as { deviceTime: string; quality: string[] };
        // The simulator's one device with a skewed clock says nothing about latency.
        if (!quality.includes('clock_skew')) latencies.push(Date.now() - Date.parse(deviceTime));
      }
    };
    const following = Array.from({ length: STREAMS }, (_, i) =>
      follow(devices[i % devices.length]!).catch(() => {}),
    );
    while (opened < STREAMS) await sleep(100);

    load = benchWorker('./ingest-agents.worker.ts', {
      agents,
      devices: DEVICES,
      readingsPerSecondPerDevice: READINGS_PER_SECOND / (AGENTS * DEVICES),
      readingsPerMessage: READINGS_PER_MESSAGE,
      sampleEvery: 1_000_000,
    });
    await reply(load, 'ready');
    await sleep(WARMUP_SECONDS * 1000);

    const rss: number[] = [];
    const heapUsed: number[] = [];
    const sample = async () => {
      rss.push(await rssMiB(server.pid!));
      heapUsed.push(await heapUsedMiB(baseUrl));
    };
    await sample();
    measuring = true;
    const startFrames = frames;
    const started = performance.now();
    for (let t = 0; t < SECONDS; t += 5) {
      await sleep(Math.min(5, SECONDS - t) * 1000);
      await sample();
    }
    measuring = false;
    const seconds = (performance.now() - started) / 1000;
    latencies.sort((a, b) => a - b);
    const at = (q: number) =>
      latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? null;
    const context = {
      streams: STREAMS,
      offeredReadingsPerSecond: READINGS_PER_SECOND,
      seconds: Math.round(seconds),
      machine: machine(),
      postgres: db.serverVersion,
    };
    report({
      figure: 'live.delivery_latency',
      from: 'MQTT publish',
      to: 'SSE frame received',
      frames: latencies.length,
      framesPerSecond: Math.round((frames - startFrames) / seconds),
      p50Ms: at(0.5),
      p99Ms: at(0.99),
      maxMs: latencies.at(-1) ?? null,
      ...context,
    });
    report({
      figure: 'live.server_rss',
      process: 'devcloud serve (every role)',
      startMiB: rss[0],
      endMiB: rss.at(-1),
      maxMiB: Math.max(...rss),
      samplesMiB: rss,
      ...context,
    });
    // RSS alone cannot tell a leak from a heap V8 has not collected yet: the live objects, from /metrics.
    report({
      figure: 'live.server_heap_used',
      process: 'devcloud serve (every role)',
      startMiB: heapUsed[0],
      endMiB: heapUsed.at(-1),
      maxMiB: Math.max(...heapUsed),
      samplesMiB: heapUsed,
      ...context,
    });
    streams.abort();
    await Promise.all(following);
  } finally {
    streams.abort();
    if (load) {
      load.postMessage({ kind: 'stop' });
      await Promise.race([reply(load, 'stopped').catch(() => undefined), sleep(10_000)]);
      await load.terminate();
    }
    await stopServer();
    await store.close();
    await db.drop();
    await scratch.remove();
  }
}

const BUILD_EVENTS = 20_000;

/**
 * The hub's CPU per frame: building the frames of reading events (3 readings each), their sealed ids
 * included, as the hub does once per event it follows and each catch-up read does again. In this process,
 * best of 7 rounds after a warm-up; a frame's share of the fan-out to streams is not in it.
 */
function frameBuildFigure(): void {
  const receivedAt = new Date().toISOString();
  const events: RecordedEvent[] = Array.from({ length: BUILD_EVENTS }, (_, i) => ({
    id: `event-${i}`,
    type: 'ReadingsRecorded',
    data: {
      deviceId: `dev_${i % 50}`,
      projectId: 'prj_bench',
      agentId: 'agt_bench',
      receivedAt,
      readings: [1, 2, 3].map((v) => ({ capability: 'environment.temperature', value: i + v })),
    },
    metadata: {},
    streamName: `readings-dev_${i % 50}`,
    revision: BigInt(i),
    position: (1_000_000 + i).toString(16).padStart(32, '0'),
    recordedAt: new Date(),
  }));
  const lookups = { projectOfDevice: () => undefined, capabilityOfCommand: () => undefined };
  // A key of this run only: the cost does not depend on which.
  const ids = new FrameIds(randomBytes(32));
  let frames = 0;
  const round = () => {
    const started = process.hrtime.bigint();
    for (const event of events) frames += framesOf(event, lookups, ids).length;
    return Number(process.hrtime.bigint() - started);
  };
  round();
  frames = 0;
  const rounds = Array.from({ length: 7 }, round);
  const perFrame = Math.min(...rounds) / (frames / rounds.length);
  report({
    figure: 'live.frame_build',
    what: 'framesOf on ReadingsRecorded events of 3 readings, sealed ids included',
    frames: frames / rounds.length,
    nsPerFrame: Math.round(perFrame),
    machine: machine(),
  });
}

/** Public ids of the adopted (non-hub) devices, from their registration events. */
async function adoptedDevices(store: PostgresEventStore): Promise<string[]> {
  const ids: string[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await store.readAll({ after, maxCount: 1000, eventTypes: ['DeviceRegistered'] });
    for (const e of page.events) {
      const data = e.data as { deviceId: string; kind: string };
      if (data.kind === 'device') ids.push(data.deviceId);
    }
    after = page.lastPosition;
    if (page.atEnd) return ids;
  }
}

/** Only this bench's service process knows it; it is not a secret of any deployment. */
const SCRAPER_TOKEN = randomBytes(24).toString('hex');

async function heapUsedMiB(baseUrl: string): Promise<number> {
  const response = await fetch(`${baseUrl}/metrics`, {
    headers: { Authorization: `Bearer ${SCRAPER_TOKEN}` },
  });
  const used = /^nodejs_heap_size_used_bytes (\S+)$/m.exec(await response.text())?.[1];
  return Math.round(Number(used ?? NaN) / 1024 / 1024);
}

async function rssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kib / 1024);
}
