import { spawn, type ChildProcess } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { expect } from 'chai';
import { freePort } from '../../src/infra/ports.js';
import { clusterDirectory } from '../support/run-directory.js';

/**
 * The fresh-machine path: no DATABASE_URL, so `devcloud serve` runs the embedded PostgreSQL under DATA_DIR;
 * the CLI joins it while the server runs, starts (and stops) it itself when not, and SIGTERM shuts down cleanly.
 */
function cli(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['bin/devcloud.js', ...args], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('exit', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

async function waitForHealth(url: string, timeoutMs: number): Promise<Response> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fetch(url);
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

describe('service lifecycle on the embedded database', function () {
  this.timeout(180_000);
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  let server: ChildProcess | undefined;
  let httpPort: number;

  before(async () => {
    dataDir = await clusterDirectory('life');
    const { DATABASE_URL: _omit, EVENTSTORE_URL: _omit2, ...rest } = process.env;
    httpPort = await freePort();
    env = {
      ...rest,
      DATA_DIR: dataDir,
      EMBEDDED_PG_PORT: String(await freePort()),
      HTTP_PORT: String(httpPort),
      HTTP_HOST: '127.0.0.1',
      MQTT_PORT: String(await freePort()),
      LOG_LEVEL: 'info',
    };
  });
  after(async () => {
    server?.kill('SIGKILL');
    await cli(['migrate'], env); // make sure no cluster is left running: this starts and stops it if needed
    await rm(dataDir, { recursive: true, force: true });
  });

  it('serves on the embedded default, shares the database with the CLI, and shuts down cleanly on SIGTERM', async () => {
    server = spawn(process.execPath, ['bin/devcloud.js', 'serve', '--roles', 'api,projector'], {
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let logs = '';
    server.stdout!.on('data', (c: Buffer) => (logs += c.toString()));
    const health = await waitForHealth(`http://127.0.0.1:${httpPort}/health`, 120_000);
    expect(health.status).to.equal(200);

    const whileRunning = await cli(['projections', 'status', '--json'], env);
    expect(whileRunning.code, whileRunning.stderr).to.equal(0);
    expect(JSON.parse(whileRunning.stdout).projectors.map((p: { name: string }) => p.name)).to.include(
      'audit',
    );

    const exited = new Promise<number | null>((resolve) => server!.once('exit', (code) => resolve(code)));
    server.kill('SIGTERM');
    expect(await exited).to.equal(0);
    server = undefined;
    expect(logs).to.include('"msg":"stopped"');
    expect(logs).to.include('embedded PostgreSQL stopped');

    const afterwards = await cli(['projections', 'status', '--json'], env);
    expect(afterwards.code, afterwards.stderr).to.equal(0);
    expect(JSON.parse(afterwards.stdout).projectors.length).to.be.greaterThan(0);
  });

  it('refuses a bad configuration value with a one-line reason and a non-zero exit', async () => {
    const result = await cli(['serve'], { ...env, HTTP_PORT: 'not-a-port' });
    expect(result.code).to.equal(1);
    expect(result.stderr.trim()).to.match(/^devcloud: invalid configuration: HTTP_PORT: /);
  });
});
