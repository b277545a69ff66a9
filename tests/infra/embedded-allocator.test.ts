import { chmod, readFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import { createLogger } from '../../src/infra/logger.js';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/infra/postgres/embedded.js';
import { freePort } from '../../src/infra/ports.js';
import { tempDirectory } from '../support/run-directory.js';

/** The environment the cluster's postmaster runs with (every backend is forked from it), from /proc. */
async function serverEnvironment(dataDir: string): Promise<Map<string, string>> {
  const pidFile = await readFile(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8');
  const pid = Number(pidFile.split('\n')[0]);
  const environ = await readFile(`/proc/${pid}/environ`, 'utf8');
  return new Map(
    environ
      .split('\0')
      .filter((entry) => entry.includes('='))
      .map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
  );
}

/**
 * The embedded cluster's server keeps large blocks on its heap between statements (embedded.ts,
 * SERVER_ALLOCATOR): without it, PostgreSQL paid a page fault for every 4 KiB a statement took.
 */
describe('the embedded cluster’s allocator settings', function () {
  this.timeout(120_000);
  let dataDir: string;
  let cluster: EmbeddedDatabase | undefined;
  const saved = process.env.MALLOC_TRIM_THRESHOLD_;

  before(async () => {
    dataDir = await tempDirectory('allocator');
    await chmod(dataDir, 0o755); // as root, PostgreSQL runs as `postgres`, which must reach the directory
  });
  afterEach(async () => {
    if (saved === undefined) delete process.env.MALLOC_TRIM_THRESHOLD_;
    else process.env.MALLOC_TRIM_THRESHOLD_ = saved;
    await cluster?.stop();
    cluster = undefined;
  });

  const start = async () => {
    cluster = await startEmbeddedPostgres({
      dataDir,
      port: await freePort(),
      logger: createLogger('silent'),
    });
  };

  it('starts the server with large blocks kept on the heap', async () => {
    delete process.env.MALLOC_TRIM_THRESHOLD_;
    await start();
    const environment = await serverEnvironment(dataDir);
    expect(environment.get('MALLOC_MMAP_THRESHOLD_')).to.equal(String(32 * 2 ** 20));
    expect(environment.get('MALLOC_TRIM_THRESHOLD_')).to.equal(String(128 * 2 ** 20));
  });

  it('leaves an operator’s own setting as it is', async () => {
    process.env.MALLOC_TRIM_THRESHOLD_ = '1048576';
    await start();
    const environment = await serverEnvironment(dataDir);
    expect(environment.get('MALLOC_TRIM_THRESHOLD_')).to.equal('1048576');
    expect(environment.get('MALLOC_MMAP_THRESHOLD_')).to.equal(String(32 * 2 ** 20));
  });
});
