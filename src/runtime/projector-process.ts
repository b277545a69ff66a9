import { fork, type ChildProcess } from 'node:child_process';
import type { Logger } from '../infra/logger.js';

/** What the projector child tells its parent after each committed batch, for the parent's /metrics. */
export interface ProjectedBatchMessage {
  readonly kind: 'projected';
  readonly projector: string;
  readonly events: number;
}

export interface ProjectorProcessOptions {
  /** The CLI script this process was started with: the child runs `<entry> serve --roles projector`. */
  readonly entry: string;
  /** The database the parent opened (the embedded cluster's URL included): the child never starts its own. */
  readonly databaseUrl: string;
  readonly logger: Logger;
  /** How long the child may take to commit its batch and stop before it is killed. */
  readonly stopGraceMs: number;
  readonly onBatch?: (projector: string, events: number) => void;
  /** First pause before restarting a child that died; doubles up to 30 s, back to this after a minute up. */
  readonly restartDelayMs?: number;
}

const MAX_RESTART_DELAY_MS = 30_000;
const STABLE_AFTER_MS = 60_000;

/**
 * The projectors in a process of their own, so that their batches (JSON folding, large statements) and the
 * broker's and API's requests no longer share one event loop: on two cores each gets one. The child is
 * supervised: restarted with a growing pause if it dies, stopped with the parent. If the parent itself dies
 * (SIGKILL), the child sees its IPC channel close and stops by itself (src/cli/commands/serve.ts), so no
 * projector outlives the service. Correctness never rests on there being one child: projectors are elected
 * (src/projections/runner.ts).
 */
export class ProjectorProcess {
  #child: ChildProcess | undefined;
  #stopping = false;
  #restartTimer: NodeJS.Timeout | undefined;
  readonly #firstDelayMs: number;
  #delayMs: number;

  constructor(private readonly options: ProjectorProcessOptions) {
    this.#firstDelayMs = options.restartDelayMs ?? 1000;
    this.#delayMs = this.#firstDelayMs;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  start(): void {
    const { logger } = this.options;
    const startedAt = Date.now();
    const child = fork(this.options.entry, ['serve', '--roles', 'projector'], {
      // No METRICS_TOKEN: its figures reach the parent's /metrics, and HTTP_PORT is the parent's.
      env: {
        ...process.env,
        DATABASE_URL: this.options.databaseUrl,
        ROLES: 'projector',
        METRICS_TOKEN: undefined,
      },
      // Its logs pass through this process rather than inheriting our stdout and stderr: a child orphaned by
      // a SIGKILL must not hold our caller's pipes open while it winds down.
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    child.stdout!.pipe(process.stdout, { end: false });
    child.stderr!.pipe(process.stderr, { end: false });
    this.#child = child;
    child.on('message', (message: ProjectedBatchMessage) => {
      if (message?.kind === 'projected') this.options.onBatch?.(message.projector, message.events);
    });
    child.on('error', (error) => logger.error({ err: error }, 'projector process failed'));
    child.once('exit', (code, signal) => {
      if (this.#child === child) this.#child = undefined;
      if (this.#stopping) return;
      if (Date.now() - startedAt > STABLE_AFTER_MS) this.#delayMs = this.#firstDelayMs;
      logger.error(
        { code, signal, restartInMs: this.#delayMs },
        'projector process exited: restarting it (projections wait meanwhile; /health shows their lag)',
      );
      this.#restartTimer = setTimeout(() => this.start(), this.#delayMs);
      this.#delayMs = Math.min(this.#delayMs * 2, MAX_RESTART_DELAY_MS);
    });
    logger.info({ pid: child.pid }, 'projector process started');
  }

  /** SIGTERM, then SIGKILL after the grace period; resolves once the child has exited. */
  async stop(): Promise<void> {
    this.#stopping = true;
    clearTimeout(this.#restartTimer);
    const child = this.#child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const kill = setTimeout(() => {
      this.options.logger.warn({ pid: child.pid }, 'projector process did not stop in time: killed');
      child.kill('SIGKILL');
    }, this.options.stopGraceMs);
    await exited;
    clearTimeout(kill);
  }
}
