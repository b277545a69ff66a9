import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { loadConfig, type Config } from '../../src/config.js';
import type { EdgeSim } from '../../src/edge-sim/index.js';
import type { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import { freePort } from '../../src/infra/ports.js';
import { allProjectors } from '../../src/runtime/projectors.js';
import { startService, type RunningService } from '../../src/runtime/service.js';
import { catchUpAll, type TestApi } from './api-harness.js';
import { tempDirectory } from './run-directory.js';
import { freshDatabase, type TestDatabase } from './database.js';
import { serviceLogger } from './service-log.js';

const run = promisify(execFile);
const CLI = path.resolve('bin/devcloud.js');

/**
 * The whole service (api, ingress, projector, scheduler) in this process, over a fresh database, with a
 * real mTLS broker on a free port and its edge CA in a temporary DATA_DIR. It has the TestApi shape, so
 * createTenant and call() work on it.
 */
export interface EdgeService extends TestApi {
  readonly service: RunningService;
  readonly mqttPort: number;
  readonly dataDir: string;
  /** The environment a `devcloud` child process needs to reach this service's database and CA. */
  readonly env: Record<string, string>;
  /** Runs `devcloud <args> --json` as a child process; resolves with its parsed stdout line. */
  cli(...args: string[]): Promise<Record<string, unknown>>;
}

/** The settings that put a service on a test database, a DATA_DIR and a broker on a local port. */
export function edgeEnvironment(db: TestDatabase, dataDir: string, mqttPort: number): Record<string, string> {
  return {
    DATABASE_URL: db.url,
    DATA_DIR: dataDir,
    MQTT_PORT: String(mqttPort),
    MQTT_HOST: '127.0.0.1',
    MQTT_PUBLIC_URL: `mqtts://127.0.0.1:${mqttPort}`,
  };
}

export async function startEdgeService(
  options: {
    roles?: Config['ROLES'];
    db?: TestDatabase;
    now?: () => number;
    /** More settings, as environment variables (e.g. a small READINGS_QUOTA_*). */
    settings?: Record<string, string>;
  } = {},
): Promise<EdgeService> {
  const db = options.db ?? (await freshDatabase());
  const dataDir = await tempDirectory('edge');
  const mqttPort = await freePort();
  const env = edgeEnvironment(db, dataDir, mqttPort);
  const config = loadConfig({
    ...env,
    LOG_LEVEL: 'silent',
    HTTP_PORT: '0',
    HTTP_HOST: '127.0.0.1',
    RATE_LIMIT_PER_SECOND: '100000',
    RATE_LIMIT_BURST: '100000',
    ...options.settings,
  });
  const service = await startService(config, serviceLogger(), options.roles, { now: options.now });
  const store = service.store as PostgresEventStore;
  return {
    baseUrl: `http://127.0.0.1:${service.httpPort}`,
    db,
    store,
    config,
    // Undefined when the roles leave out api; no test asks for it then.
    live: service.live!,
    service,
    mqttPort,
    dataDir,
    env,
    catchUp: (position) => catchUpAll(db, store, allProjectors(), position),
    async cli(...args) {
      const { stdout } = await run(process.execPath, [CLI, ...args, '--json'], {
        env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
        // CLI runs took 14-23 s beside the other CI leg: 30 s left little room (tests/support/devcloud.ts: 60 s).
        timeout: 60_000,
      });
      return JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
    },
    async close() {
      await service.stop();
      await db.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * One edge service for the suite that calls it (mocha's hooks): read `edge` inside the tests. A simulator
 * handed to `stopAfter` is stopped after the suite, before the service closes.
 */
export function edgeServiceForSuite(): { readonly edge: EdgeService; stopAfter(sim: EdgeSim): EdgeSim } {
  let edge: EdgeService | undefined;
  let sim: EdgeSim | undefined;
  before(async () => {
    edge = await startEdgeService();
  });
  after(async () => {
    await sim?.stop(1000);
    await edge?.close();
  });
  return {
    get edge() {
      return edge!;
    },
    stopAfter(started) {
      sim = started;
      return started;
    },
  };
}
