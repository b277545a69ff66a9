import { spawn, type ChildProcess } from 'node:child_process';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import { createLogger } from '../../src/infra/logger.js';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/infra/postgres/embedded.js';
import { createPool, type Pool } from '../../src/infra/postgres/pool.js';
import { createProject } from '../../src/identity/projects.js';
import { freePort } from '../../src/infra/ports.js';
import { clusterDirectory } from '../support/run-directory.js';

const logger = createLogger('silent');

let service: ChildProcess | undefined;
let output = '';

/** Waits for `probe`; fails at once, with the service's output, if the service died meanwhile. */
async function until<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (service && service.exitCode !== null) {
      throw new Error(
        `the service exited (${service.exitCode}) waiting for ${what}:\n${output.slice(-2000)}`,
      );
    }
    const found = await probe().catch(() => undefined);
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A database restart under load, with its own PostgreSQL cluster so the restart touches nothing else: the
 * service (API, projectors, scheduler in one process) must see the outage, live through it, and recover on
 * its own: health back to 200 and projectors applying what is written after the restart.
 */
describe('a PostgreSQL restart under load', function () {
  this.timeout(180_000);
  let dir: string;
  let cluster: EmbeddedDatabase;
  let pool: Pool | undefined;

  before(async () => {
    dir = await clusterDirectory('restart');
  });
  after(async () => {
    service?.kill('SIGKILL');
    await pool?.end().catch(() => {});
    await cluster?.stop().catch(() => {});
    await rm(dir, { recursive: true, force: true });
  });

  it('is lived through by the service, which recovers without a restart of its own', async () => {
    const pgPort = await freePort();
    const start = () =>
      startEmbeddedPostgres({
        dataDir: path.join(dir, 'pg'),
        port: pgPort,
        logger,
        databaseName: 'devcloud',
      });
    cluster = await start();
    const httpPort = await freePort();
    const { DATABASE_URL: _db, EVENTSTORE_URL: _es, ...env } = process.env;
    service = spawn(process.execPath, ['bin/devcloud.js', 'serve', '--roles', 'api,projector,scheduler'], {
      env: {
        ...env,
        DATABASE_URL: cluster.url,
        DATA_DIR: path.join(dir, 'data'),
        HTTP_HOST: '127.0.0.1',
        HTTP_PORT: String(httpPort),
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    service.stdout!.on('data', (c: Buffer) => (output += c.toString()));
    service.stderr!.on('data', (c: Buffer) => (output += c.toString()));
    const health = () => fetch(`http://127.0.0.1:${httpPort}/health`).then((r) => r.status);
    await until(async () => ((await health()) === 200 ? true : undefined), 'the service to be healthy');

    pool = createPool(cluster.url, { max: 4 });
    const store = new PostgresEventStore(pool, { connectionString: cluster.url, idlePollMs: 50 });
    const projected = async (projectId: string) => {
      const { rows } = await pool!.query('SELECT 1 FROM projects WHERE project_id = $1', [projectId]);
      return rows.length === 1 ? true : undefined;
    };
    const before = await createProject(store, { name: 'before the restart' });
    await until(() => projected(before.projectId), 'the first project to be projected');

    // Load: projects written and health asked for continuously, through the outage.
    let loading = true;
    let written = 0;
    let unhealthy = 0;
    const load = (async () => {
      while (loading) {
        await createProject(store, { name: `load ${written}` }).then(
          () => written++,
          () => {},
        );
        if ((await health().catch(() => 0)) === 503) unhealthy++;
      }
    })();
    await until(async () => (written >= 20 ? true : undefined), 'load to run');

    await cluster.stop();
    // The outage really reached the service: it says so on /health.
    await until(async () => (unhealthy > 0 ? true : undefined), 'the service to report the database down');
    cluster = await start();

    await until(async () => ((await health()) === 200 ? true : undefined), 'health to recover');
    const after = await createProject(store, { name: 'after the restart' });
    await until(() => projected(after.projectId), 'a project written after the restart to be projected');
    loading = false;
    await load;

    expect(service.exitCode, `the service is still running; its output:\n${output}`).to.equal(null);
    expect(output).not.to.match(/uncaught|unhandled/i);
    const { rows } = await pool.query<{ n: string }>('SELECT count(*) AS n FROM projects');
    const { rows: truth } = await pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM eventstore.events WHERE event_type = 'ProjectCreated'`,
    );
    await until(async () => {
      const { rows: now } = await pool!.query<{ n: string }>('SELECT count(*) AS n FROM projects');
      return now[0]!.n === truth[0]!.n ? true : undefined;
    }, 'every stored project to be projected');
    expect(Number(rows[0]!.n)).to.be.greaterThan(20);
  });
});
