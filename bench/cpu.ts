import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import type { Pool } from '../src/infra/postgres/pool.js';

/**
 * CPU time from /proc, the one measure that stays honest on a machine shared with other work: wall-clock
 * rates drop when someone else runs, but the CPU each message costs us does not (much). Linux only.
 */
const TICK_US = 1e6 / Number(execFileSync('getconf', ['CLK_TCK']).toString().trim() || 100);

/** utime + stime of a process (every thread, live or ended) plus its waited-for children; 0 once gone. */
export function processCpuUs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces), counted from field 3.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0);
    return ticks * TICK_US;
  } catch {
    return 0;
  }
}

/** The calling thread, a worker thread included: /proc resolves thread-self for whoever reads it. */
export function currentThreadCpuUs(): number {
  return threadStatCpuUs('/proc/thread-self/stat');
}

function threadStatCpuUs(path: string): number {
  try {
    const stat = readFileSync(path, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_US;
  } catch {
    return 0;
  }
}

/** `root` and every process below it. */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // ended while we looked
    }
  }
  const tree: number[] = [];
  const visit = (pid: number) => {
    tree.push(pid);
    for (const child of children.get(pid) ?? []) visit(child);
  };
  visit(root);
  return tree;
}

export function rssMiB(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    return kb / 1024;
  } catch {
    return 0;
  }
}

/** Busy CPU of the whole machine (all processes, all cores), for context: was anything else running? */
function machineBusyUs(): number {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.split(/\s+/).slice(1).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = cpu;
  return (user! + nice! + system! + irq! + softirq! + steal!) * TICK_US;
}

const BACKENDS = `
  SELECT pid FROM pg_stat_activity
   WHERE datname = current_database() AND pid <> pg_backend_pid()
     AND NOT (coalesce(application_name, '') = ANY ($1::text[]))`;

/**
 * CPU of the PostgreSQL backends serving one database (the bench's own connections excluded by their
 * application_name). Backends come and go with pools, so they are listed every `everyMs` and each one's
 * CPU is counted from when the meter first saw it (or from zero when it appeared after the start).
 * Cluster-wide processes (WAL writer, checkpointer) are shared with any other database and not counted.
 */
export class PostgresCpuMeter {
  readonly #first = new Map<number, number>();
  readonly #last = new Map<number, number>();
  #timer: NodeJS.Timeout | undefined;
  #sampling: Promise<void> = Promise.resolve();

  constructor(
    private readonly pool: Pool,
    private readonly excludedApplications: readonly string[],
    private readonly everyMs = 500,
  ) {}

  async start(): Promise<void> {
    await this.#sample(true);
    this.#timer = setInterval(() => {
      this.#sampling = this.#sampling.then(() => this.#sample(false)).catch(() => undefined);
    }, this.everyMs);
  }

  /** Microseconds of CPU the database's backends used since start. */
  async stop(): Promise<number> {
    clearInterval(this.#timer);
    await this.#sampling;
    await this.#sample(false);
    let total = 0;
    for (const [pid, last] of this.#last) total += last - (this.#first.get(pid) ?? 0);
    return total;
  }

  async #sample(initial: boolean): Promise<void> {
    const { rows } = await this.pool.query<{ pid: number }>(BACKENDS, [[...this.excludedApplications]]);
    for (const { pid } of rows) {
      const cpu = processCpuUs(pid);
      if (cpu === 0) continue;
      if (initial) this.#first.set(pid, cpu);
      this.#last.set(pid, Math.max(cpu, this.#last.get(pid) ?? 0));
    }
  }
}

/** CPU of a set of processes plus PostgreSQL's, between start() and stop(). */
export class CpuMeter {
  readonly #postgres: PostgresCpuMeter;
  #processes = 0;
  #machine = machineBusy();

  constructor(
    pool: Pool,
    private readonly processes: () => number,
    excludedApplications: readonly string[],
  ) {
    this.#postgres = new PostgresCpuMeter(pool, excludedApplications);
  }

  async start(): Promise<void> {
    await this.#postgres.start();
    this.#processes = this.processes();
    this.#machine = machineBusy();
  }

  async stop(): Promise<{
    processUs: number;
    postgresUs: number;
    machineBusyShare: number;
    seconds: number;
  }> {
    const processUs = this.processes() - this.#processes;
    const { share, seconds } = this.#machine.sinceStart();
    const postgresUs = await this.#postgres.stop();
    return { processUs, postgresUs, seconds, machineBusyShare: share };
  }
}

/**
 * How busy the whole machine is from now on: `sinceStart()` gives the seconds since and the busy share of
 * all cores over them (1 = every core; above what we used, someone else was running).
 */
export function machineBusy(): { sinceStart(): { share: number; seconds: number } } {
  const busyAt = machineBusyUs();
  const startedAt = performance.now();
  return {
    sinceStart: () => {
      const elapsedUs = (performance.now() - startedAt) * 1000;
      return {
        seconds: elapsedUs / 1e6,
        share: round((machineBusyUs() - busyAt) / (elapsedUs * cpuCount()), 2),
      };
    },
  };
}

function cpuCount(): number {
  return readFileSync('/proc/cpuinfo', 'utf8').match(/^processor\s*:/gm)?.length ?? 1;
}

export function round(value: number, digits = 0): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
