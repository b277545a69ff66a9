import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { expect } from 'chai';
import { freePort } from '../../src/infra/ports.js';
import { createProject } from '../../src/identity/projects.js';
import { closeEventStore, openEventStore, type RunningEventStore } from '../support/event-store.js';
import { tempDirectory } from '../support/run-directory.js';

/** Processes whose parent is `pid` and whose command line holds `needle`. */
function childrenOf(pid: number, needle: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ');
      if (ppid === pid && cmdline.includes(needle)) found.push(Number(entry));
    } catch {
      // ended while we looked
    }
  }
  return found;
}

/** Running: a zombie (exited, not yet reaped by whoever inherited it) counts as gone. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] !== 'Z';
  } catch {
    return false;
  }
}

async function within<T>(ms: number, what: string, probe: () => Promise<T | undefined> | T | undefined) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const METRICS_TOKEN = 'projector-process-test-metrics-token-0123456789';

describe('npm start runs the projectors in a supervised process of their own', function () {
  this.timeout(120_000);
  let running: RunningEventStore;
  let server: ChildProcess | undefined;
  let dataDir: string;
  let httpPort: number;
  let logs = '';

  beforeEach(async () => {
    running = await openEventStore();
    dataDir = await tempDirectory('projector-process');
    httpPort = await freePort();
    const { EVENTSTORE_URL: _omit, ROLES: _roles, PROJECTOR_PROCESS: _mode, ...rest } = process.env;
    logs = '';
    server = spawn(process.execPath, ['bin/devcloud.js', 'serve'], {
      env: {
        ...rest,
        DATABASE_URL: running.db.url,
        DATA_DIR: dataDir,
        HTTP_HOST: '127.0.0.1',
        HTTP_PORT: String(httpPort),
        MQTT_HOST: '127.0.0.1',
        MQTT_PORT: String(await freePort()),
        METRICS_TOKEN,
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    server.stdout!.on('data', (c: Buffer) => (logs += c.toString()));
    await within(60_000, 'the service healthy', () =>
      fetch(`http://127.0.0.1:${httpPort}/health`).then(
        (r) => (r.status === 200 ? true : undefined),
        () => undefined,
      ),
    );
  });
  afterEach(async () => {
    if (server && server.exitCode === null && server.signalCode === null) {
      const exited = new Promise((resolve) => server!.once('exit', resolve));
      server.kill('SIGTERM');
      await exited;
    }
    await closeEventStore(running);
    await rm(dataDir, { recursive: true, force: true });
  });

  /** The parent's count of events its projector process reported projected, from its /metrics. */
  async function projected(projector: string): Promise<number> {
    const response = await fetch(`http://127.0.0.1:${httpPort}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    const text = await response.text();
    const line = text
      .split('\n')
      .find((l) => l.startsWith(`devcloud_projection_events_total{projector="${projector}"}`));
    return line ? Number(line.split(' ').at(-1)) : 0;
  }

  /**
   * The one projector child other than `not`, once it has projected a new project and the parent reported
   * it: up and projecting, so a signal meets its handlers rather than a process still loading.
   */
  async function projectingChild(name: string, not?: number): Promise<number> {
    const [child] = await within(20_000, 'a projector child', () => {
      const found = childrenOf(server!.pid!, 'serve --roles projector');
      return found.length === 1 && found[0] !== not ? found : undefined;
    });
    const before = await projected('identity');
    await createProject(running.store, { name });
    await within(20_000, `project ${name} projected and reported`, async () =>
      (await projected('identity')) > before ? true : undefined,
    );
    return child!;
  }

  it('projects in the child, reports to the parent, is restarted when it dies, and dies with the parent', async () => {
    const child = await projectingChild('first');

    // The fault: the projector process dies without warning.
    process.kill(child, 'SIGKILL');
    await within(10_000, 'the killed child gone', () => (alive(child) ? undefined : true));
    const replacement = await projectingChild('second', child);
    expect(logs).to.include('projector process exited: restarting it');

    // The parent dies without warning: its child must not outlive it.
    server!.kill('SIGKILL');
    await within(15_000, 'the child stopping once its parent is gone', () =>
      alive(replacement) ? undefined : true,
    );
  });

  it('a child whose parent is killed while it is still starting stops too', async () => {
    // The fault: the parent dies the moment its child exists, before the child has finished starting.
    const [child] = await within(20_000, 'a projector child', () => {
      const found = childrenOf(server!.pid!, 'serve --roles projector');
      return found.length === 1 ? found : undefined;
    });
    server!.kill('SIGKILL');
    await within(30_000, 'the orphaned child stopping by itself', () => (alive(child!) ? undefined : true));
  });

  it('stops as one on SIGTERM: the child first, then the parent', async () => {
    const child = await projectingChild('first');
    const exited = new Promise<number | null>((resolve) => server!.once('exit', (code) => resolve(code)));
    server!.kill('SIGTERM');
    expect(await exited).to.equal(0);
    expect(alive(child), 'the child is gone when the parent has exited').to.equal(false);
    expect(logs).to.include('"reason":"SIGTERM"');
    // It stopped by itself (its IPC channel once kept it alive until the parent's grace ran out).
    expect(logs).not.to.include('projector process did not stop in time');
  });
});
