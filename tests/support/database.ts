import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { createLogger } from '../../src/infra/logger.js';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/infra/postgres/embedded.js';
import { encodePgPosition } from '../../src/eventstore/postgres/position.js';
import { migrate } from '../../src/infra/postgres/migrate.js';
import { EVENT_STORE_FUNCTIONS } from '../../src/eventstore/postgres/functions/install-order.js';
import { createLockPool, createPool, type Pool } from '../../src/infra/postgres/pool.js';
import { freePort } from '../../src/infra/ports.js';
import { removeRunDirectory, runDirectory, RUN_ID, tempDirectory } from './run-directory.js';

/**
 * Tests run against a real PostgreSQL: the server named by DATABASE_URL when set (CI's own server), else an
 * embedded cluster of this run's own, in its temporary directory on a free port (initdb costs seconds: once
 * per run). Each suite gets its own fresh database cloned from a migrated template; every database is named
 * after the run, so runs side by side on one server never touch each other's.
 */
let server: Promise<{ adminUrl: string; embedded?: EmbeddedDatabase }> | undefined;
let template: Promise<string> | undefined;
const created: string[] = [];

function startServer() {
  server ??= (async () => {
    const external = process.env.DATABASE_URL;
    if (external) return { adminUrl: external };
    const embedded = await startEmbeddedPostgres({
      dataDir: path.join(await runDirectory(), 'database'),
      port: await freePort(),
      logger: createLogger('warn'),
      databaseName: 'postgres',
    });
    return { adminUrl: embedded.url, embedded };
  })();
  return server;
}

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = '/' + name;
  return u.toString();
}

async function adminQuery(sql: string): Promise<void> {
  const { adminUrl } = await startServer();
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function migratedTemplate(): Promise<string> {
  template ??= (async () => {
    const { adminUrl } = await startServer();
    const name = `dc_${RUN_ID}_template`;
    await adminQuery(`CREATE DATABASE ${name}`);
    created.push(name);
    const pool = createPool(withDatabase(adminUrl, name), { max: 2 });
    try {
      await migrate(pool, EVENT_STORE_FUNCTIONS);
    } finally {
      await pool.end();
    }
    return name;
  })();
  return template;
}

export interface TestDatabase {
  readonly url: string;
  readonly pool: Pool;
  /** Leadership connections, apart from the query pool as in the service. */
  readonly locks: Pool;
  drop(): Promise<void>;
}

/** A new database with every migration applied. */
export async function freshDatabase(options: { migrated?: boolean } = {}): Promise<TestDatabase> {
  const { adminUrl } = await startServer();
  const name = `dc_${RUN_ID}_${randomBytes(4).toString('hex')}`;
  if (options.migrated === false) {
    await adminQuery(`CREATE DATABASE ${name}`);
  } else {
    await adminQuery(`CREATE DATABASE ${name} TEMPLATE ${await migratedTemplate()}`);
  }
  created.push(name);
  const url = withDatabase(adminUrl, name);
  const pool = createPool(url, { max: 20, applicationName: 'device-cloud-test' });
  const locks = createLockPool(url);
  return {
    url,
    pool,
    locks,
    async drop() {
      await Promise.all([pool.end().catch(() => {}), locks.end().catch(() => {})]);
      await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
      created.splice(created.indexOf(name), 1);
    },
  };
}

/** Drops what the run created, stops its embedded cluster and removes its temporary directory. */
export async function releaseTestServer(): Promise<void> {
  if (server) {
    for (const name of [...created].reverse()) {
      await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
    }
    const started = await server.catch(() => undefined);
    await started?.embedded?.stop();
    server = undefined;
    template = undefined;
  }
  await removeRunDirectory();
}

/** The connection string of the test server's admin database (for child processes that need their own). */
export async function testServerAdminUrl(): Promise<string> {
  return (await startServer()).adminUrl;
}

/**
 * The position of the newest committed event, visible to readers or not yet (an older transaction of the
 * same database holds visibility back). What a test waits for after its writes.
 */
export async function committedHead(pool: Pool): Promise<string | undefined> {
  const { rows } = await pool.query<{ transaction_id: string; global_position: string }>(
    // e.: a bare name would order by the output column, the id as text ("998" after "1015").
    `SELECT e.transaction_id::text, e.global_position FROM eventstore.events e
      ORDER BY e.transaction_id DESC, e.global_position DESC LIMIT 1`,
  );
  return rows[0] ? encodePgPosition(rows[0].transaction_id, rows[0].global_position) : undefined;
}

/**
 * A fresh database and a temporary directory for a suite whose tests run services or processes on them
 * (mocha's hooks): after the suite, `stopFirst` stops those, then the database is dropped and the directory
 * removed. Read `db` and `dataDir` inside the tests.
 */
export function databaseAndDirectoryForSuite(
  prefix: string,
  stopFirst: () => Promise<void>,
): { readonly db: TestDatabase; readonly dataDir: string } {
  let db: TestDatabase | undefined;
  let dataDir: string | undefined;
  before(async () => {
    db = await freshDatabase();
    dataDir = await tempDirectory(prefix);
  });
  after(async () => {
    await stopFirst();
    await db?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });
  return {
    get db() {
      return db!;
    },
    get dataDir() {
      return dataDir!;
    },
  };
}
