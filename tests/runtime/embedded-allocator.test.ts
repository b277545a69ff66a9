import { rm } from 'node:fs/promises';
import { expect } from 'chai';
import pg from 'pg';
import { createLogger } from '../../src/infra/logger.js';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/infra/postgres/embedded.js';
import { freePort } from '../../src/infra/ports.js';
import { clusterDirectory } from '../support/run-directory.js';

const VARIABLES = ['MALLOC_MMAP_THRESHOLD_', 'MALLOC_TRIM_THRESHOLD_'] as const;

/**
 * The allocator's variables in a backend's environment, as a program the backend starts sees them (a
 * backend is forked from the postmaster, so this is what every statement's memory is allocated under). Read
 * through the server, as its superuser: /proc of another user's process may be closed to us, and a
 * backend's own /proc environ is overwritten by its process title.
 */
async function backendEnvironment(url: string): Promise<Map<string, string>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('CREATE TEMP TABLE environment (entry text)');
    await client.query("COPY environment FROM PROGRAM 'env | grep ^MALLOC_ || true'");
    const { rows } = await client.query<{ entry: string }>('SELECT entry FROM environment');
    return new Map(
      rows.map(({ entry }) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
    );
  } finally {
    await client.end();
  }
}

/**
 * The embedded cluster's server keeps large blocks on its heap between statements (embedded.ts,
 * SERVER_ALLOCATOR): left to glibc, PostgreSQL kept faulting fresh pages in for them.
 */
describe('the embedded cluster’s allocator settings', function () {
  this.timeout(120_000);
  let dataDir: string;
  let cluster: EmbeddedDatabase | undefined;
  const saved = new Map(VARIABLES.map((name) => [name, process.env[name]]));

  before(async () => {
    dataDir = await clusterDirectory('allocator');
  });
  beforeEach(() => {
    for (const name of VARIABLES) delete process.env[name];
  });
  afterEach(async () => {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await cluster?.stop().catch(() => {});
    cluster = undefined;
  });
  after(() => rm(dataDir, { recursive: true, force: true }));

  const start = async () => {
    cluster = await startEmbeddedPostgres({
      dataDir,
      port: await freePort(),
      logger: createLogger('silent'),
    });
    return cluster;
  };

  it('starts the server with large blocks kept on the heap', async () => {
    const environment = await backendEnvironment((await start()).url);
    expect(environment.get('MALLOC_MMAP_THRESHOLD_')).to.equal(String(32 * 2 ** 20));
    expect(environment.get('MALLOC_TRIM_THRESHOLD_')).to.equal(String(128 * 2 ** 20));
  });

  it('leaves an operator’s own setting as it is', async () => {
    process.env.MALLOC_TRIM_THRESHOLD_ = '1048576';
    const environment = await backendEnvironment((await start()).url);
    expect(environment.get('MALLOC_TRIM_THRESHOLD_')).to.equal('1048576');
    expect(environment.get('MALLOC_MMAP_THRESHOLD_')).to.equal(String(32 * 2 ** 20));
  });
});
