import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { processTree } from '../../bench/cpu.js';
import { clusterDirectory } from '../support/run-directory.js';

/**
 * `npm run bench` stopped early (bench/interrupt.ts) stops what it started: the embedded PostgreSQL, the
 * service process of the end-to-end bench, their temporary directories. Each case first sees those running,
 * then signals, then checks that none of them is left.
 */
describe('an interrupted benchmark run', function () {
  this.timeout(180_000);
  // What a case saw running, so that a failing case does not leave it behind either.
  let seen: { pid: number; command: string }[] = [];
  afterEach(() => {
    for (const p of seen.filter((s) => alive(s.pid))) {
      try {
        // A postmaster stops its backends on SIGINT (fast shutdown); anything else is simply killed.
        process.kill(p.pid, isPostmaster(p.command) ? 'SIGINT' : 'SIGKILL');
      } catch {
        // It ended between the look and the signal (a projector process follows its parent, say).
      }
    }
    seen = [];
  });

  interface Bench {
    readonly child: ChildProcess;
    readonly tmp: string;
    /** Its exit code, or the signal that ended it. */
    readonly exited: Promise<number | NodeJS.Signals | null>;
    stderr: string;
  }

  async function startBench(env: NodeJS.ProcessEnv, options: { detached?: boolean } = {}): Promise<Bench> {
    const tmp = await clusterDirectory('bench-interrupt');
    const { DATABASE_URL: _server, ...rest } = process.env;
    const child = spawn(process.execPath, ['--import', 'tsx', 'bench/run.ts'], {
      env: { ...rest, TMPDIR: tmp, LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: options.detached,
    });
    const bench: Bench = {
      child,
      tmp,
      exited: new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal))),
      stderr: '',
    };
    child.stderr!.on('data', (c: Buffer) => (bench.stderr += c.toString()));
    return bench;
  }

  /**
   * What the bench started, with command lines, once `ready` holds for them (60 s at most): its descendants,
   * and its embedded cluster, which pg_ctl detaches (the postmaster's parent is init), found by its data
   * directory under the bench's TMPDIR, with the postmaster's own children.
   */
  async function startedOnce(
    bench: Bench,
    ready: (commands: string[]) => boolean,
  ): Promise<{ pid: number; command: string }[]> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const clusters = pidsWhere((command) => command.includes(` -D ${bench.tmp}/devcloud-bench-db-`));
      const tree = [...new Set([bench.child.pid!, ...clusters].flatMap((root) => processTree(root)))]
        .filter((pid) => pid !== bench.child.pid)
        .map((pid) => ({ pid, command: commandOf(pid) }));
      seen = tree;
      if (ready(tree.map((p) => p.command))) return tree;
      if (bench.child.exitCode !== null) throw new Error(`the bench ended first: ${bench.stderr}`);
      if (Date.now() > deadline) throw new Error(`not ready in time: ${JSON.stringify(tree)}`);
      await sleep(100);
    }
  }

  async function exitCode(bench: Bench): Promise<number | NodeJS.Signals | null> {
    const patience = new AbortController();
    const code = await Promise.race([
      bench.exited,
      sleep(90_000, 'timeout' as const, { signal: patience.signal }).catch(() => undefined),
    ]).finally(() => patience.abort());
    if (code === 'timeout') {
      bench.child.kill('SIGKILL');
      throw new Error(`the bench did not stop within 90 s: ${bench.stderr}`);
    }
    return code ?? null;
  }

  /** What the run made in its TMPDIR (tsx keeps a cache of its own there). */
  const benchDirectories = async (bench: Bench) =>
    (await readdir(bench.tmp)).filter((name) => name.startsWith('devcloud-bench-'));

  const isPostmaster = (command: string) =>
    command.includes(' -D ') && command.includes('devcloud-bench-db-');
  const isService = (command: string) => /devcloud\.js serve/.test(command);

  /** An end-to-end run of one agent, long enough never to end by itself, once its service is up. */
  async function endToEndRunUnderWay() {
    const bench = await startBench({
      BENCH_ONLY: 'e2e',
      BENCH_AGENTS: '1',
      BENCH_DEVICES: '1',
      BENCH_INGEST_RATES: '10',
      BENCH_INGEST_SECONDS: '600',
    });
    // Under way: the cluster is up and the service has started its projector process.
    const running = await startedOnce(
      bench,
      (commands) => commands.some(isPostmaster) && commands.filter(isService).length >= 2,
    );
    return { bench, running };
  }

  it('on SIGTERM to the bench alone, stops its service process and embedded PostgreSQL and removes their directories', async () => {
    const { bench, running } = await endToEndRunUnderWay();
    expect(await benchDirectories(bench)).to.have.length.greaterThan(0);

    bench.child.kill('SIGTERM');
    expect(await exitCode(bench), bench.stderr).to.equal(143);

    expect(bench.stderr).to.include('bench: SIGTERM: stopping what this run started');
    expect(await leftAfter(running, 5_000)).to.deep.equal([]);
    expect(await benchDirectories(bench)).to.deep.equal([]);
  });

  it('on Ctrl-C (SIGINT to its process group), stops the embedded PostgreSQL and removes its directory', async () => {
    const bench = await startBench({ BENCH_ONLY: 'telemetry' }, { detached: true });
    // Mid-run: the cluster is up and serves the bench's database.
    const running = await startedOnce(
      bench,
      (commands) =>
        commands.some(isPostmaster) && commands.some((c) => /^postgres: .*devcloud_bench_/.test(c)),
    );

    process.kill(-bench.child.pid!, 'SIGINT');
    expect(await exitCode(bench), bench.stderr).to.equal(130);

    expect(bench.stderr).to.include('bench: SIGINT: stopping what this run started');
    expect(await leftAfter(running, 5_000)).to.deep.equal([]);
    expect(await benchDirectories(bench)).to.deep.equal([]);
  });

  it('ends at once on a second signal, of either kind, while it is still stopping', async () => {
    const { bench } = await endToEndRunUnderWay();

    bench.child.kill('SIGTERM');
    for (const deadline = Date.now() + 30_000; !bench.stderr.includes('stopping what this run started');) {
      if (Date.now() > deadline) throw new Error(`no sign of stopping: ${bench.stderr}`);
      await sleep(20);
    }
    bench.child.kill('SIGINT');
    // Ended by the second signal itself: had the undo finished first, the exit code would be 143.
    expect(await exitCode(bench), bench.stderr).to.equal('SIGINT');
  });
});

function pidsWhere(matches: (command: string) => boolean): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((pid) => matches(commandOf(pid)));
}

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
  } catch {
    return '';
  }
}

/**
 * Which of `processes` still run once `withinMs` has passed, or none as soon as all have ended. The bench's
 * own children that it did not start for the run (tsx's esbuild helper) end when its pipe closes, a moment
 * after the bench itself: CI once saw the helper still running right at the bench's exit.
 */
async function leftAfter<P extends { pid: number }>(processes: readonly P[], withinMs: number): Promise<P[]> {
  for (const deadline = Date.now() + withinMs; ; await sleep(50)) {
    const left = processes.filter((p) => alive(p.pid));
    if (left.length === 0 || Date.now() > deadline) return left;
  }
}

/** Running, not merely a zombie waiting to be reaped by whoever adopted it. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}
