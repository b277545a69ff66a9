import type { Config } from '../config.js';
import type { EventStore } from '../eventstore/port.js';
import type { Logger } from '../infra/logger.js';
import type { Metrics } from '../infra/metrics.js';
import type { Pool } from '../infra/postgres/pool.js';
import { furthestBehind, measureLag, type LagFigures, type ProjectionLag } from './lag.js';
import { partitionOfName } from './partitions.js';
import type { Projector } from './projector.js';

export interface LagMonitorOptions {
  readonly pool: Pool;
  readonly store: EventStore;
  readonly projectors: readonly Pick<Projector, 'name' | 'eventTypes'>[];
  readonly intervalMs: number;
  readonly logger: Logger;
  readonly now?: () => number;
  /** Gauges set from every fresh measurement. */
  readonly metrics?: Pick<Metrics, 'projectionLagEvents' | 'projectionLagSeconds'>;
}

/**
 * The monitor an api node runs (and the test harness, as the api role does): measuring every configured
 * interval, its first figures in place before it resolves.
 */
export async function startLagMonitor(
  pool: Pool,
  deps: Omit<LagMonitorOptions, 'pool' | 'intervalMs'> & {
    config: Pick<Config, 'PROJECTION_LAG_INTERVAL_MS'>;
  },
): Promise<ProjectionLagMonitor> {
  const { config, ...options } = deps;
  const monitor = new ProjectionLagMonitor({
    ...options,
    pool,
    intervalMs: config.PROJECTION_LAG_INTERVAL_MS,
  });
  await monitor.start();
  return monitor;
}

/**
 * Measures every projector's lag every `intervalMs` in the background, so /health, /metrics and the state
 * endpoint read the latest figures without a query of their own per request.
 */
export class ProjectionLagMonitor implements LagFigures {
  readonly #latest = new Map<string, ProjectionLag>();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;

  constructor(private readonly options: LagMonitorOptions) {}

  /** Measures once (so the first answers have figures), then keeps measuring until stop(). */
  async start(): Promise<void> {
    await this.measure();
    this.#schedule();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }

  /**
   * The latest measurement of one projector, or of a partitioned one as a whole (its furthest-behind
   * partition, with the events all its partitions wait for); undefined before the first or for an unknown name.
   */
  lagOf(projector: string): ProjectionLag | undefined {
    const whole = this.#latest.get(projector);
    if (whole) return whole;
    const partitions = this.all().filter((lag) => partitionOfName(lag.projector).family === projector);
    return partitions.length === 0 ? undefined : furthestBehind(projector, partitions);
  }

  all(): ProjectionLag[] {
    return [...this.#latest.values()];
  }

  async measure(): Promise<void> {
    const now = new Date(this.options.now?.() ?? Date.now());
    const { pool, store, projectors, metrics } = this.options;
    this.#running = (async () => {
      for (const projector of projectors) {
        try {
          const lag = await measureLag(pool, store, projector, now);
          this.#latest.set(projector.name, lag);
          metrics?.projectionLagSeconds.set({ projector: lag.projector }, lag.seconds);
          if (lag.events !== null) metrics?.projectionLagEvents.set({ projector: lag.projector }, lag.events);
        } catch (error) {
          // A database that is down is /health's to report; the last figures stay until it is back.
          this.options.logger.debug({ err: error, projector: projector.name }, 'projection lag not measured');
        }
      }
    })();
    await this.#running;
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      void this.measure().finally(() => this.#schedule());
    }, this.options.intervalMs);
    this.#timer.unref();
  }
}
