import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { Role } from '../../src/config.js';

const CLI = fileURLToPath(new URL('../../bin/devcloud.js', import.meta.url));

/** The service's log line once every role asked for is up (src/runtime/service.ts). */
const STARTED = '"msg":"device cloud started"';

/**
 * `devcloud serve --roles ...` as a child process that can be SIGKILLed and started again. It is `ready`
 * once it logged that it started (at LOG_LEVEL info or finer). The last lines of its stderr are kept so a
 * process that fails to start can say why.
 */
export class ServiceProcess {
  readonly roles: readonly Role[];
  readonly #env: NodeJS.ProcessEnv;
  #child: ChildProcess | undefined;
  #exited: Promise<unknown> | undefined;
  #stderr: string[] = [];
  #ready = false;
  readonly #keep: RegExp | undefined;
  /** The log lines that matched `keep`, with when they were read and in which run (1 for the first start). */
  readonly kept: { readonly atMs: number; readonly line: string; readonly run: number }[] = [];
  starts = 0;
  kills = 0;

  constructor(roles: readonly Role[], env: NodeJS.ProcessEnv, options: { keep?: RegExp } = {}) {
    this.roles = roles;
    this.#env = env;
    this.#keep = options.keep;
  }

  get running(): boolean {
    return this.#child !== undefined && this.#child.exitCode === null && this.#child.signalCode === null;
  }

  get ready(): boolean {
    return this.#ready && this.running;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  start(): void {
    if (this.running) throw new Error(`${this.roles.join(',')} is already running`);
    const child = spawn(process.execPath, [CLI, 'serve', '--roles', this.roles.join(',')], {
      env: this.#env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.#ready = false;
    let pending = '';
    let partial = '';
    const run = this.starts + 1;
    child.stdout!.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      if (this.#keep) {
        const lines = (partial + text).split('\n');
        partial = lines.pop()!;
        for (const line of lines) if (this.#keep.test(line)) this.kept.push({ atMs: Date.now(), line, run });
      }
      if (this.#ready) return;
      pending = (pending + text).slice(-4096);
      if (pending.includes(STARTED)) this.#ready = true;
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      this.#stderr.push(chunk.toString('utf8'));
      if (this.#stderr.length > 20) this.#stderr.shift();
    });
    this.#child = child;
    this.#exited = once(child, 'exit');
    this.starts += 1;
  }

  /** SIGKILL: no shutdown path runs, exactly like a crash or an OOM kill. Resolves once it is gone. */
  async kill(): Promise<void> {
    if (!this.running) return;
    this.#child!.kill('SIGKILL');
    this.kills += 1;
    await this.#exited;
  }

  /** SIGTERM and a clean shutdown, or SIGKILL after `graceMs`. */
  async stop(graceMs = 20_000): Promise<void> {
    if (!this.running) return;
    this.#child!.kill('SIGTERM');
    const timer = setTimeout(() => this.#child?.kill('SIGKILL'), graceMs);
    await this.#exited;
    clearTimeout(timer);
  }

  stderrTail(): string {
    return this.#stderr.join('').slice(-2000);
  }
}
