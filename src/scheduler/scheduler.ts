import cron, { type ScheduledTask } from 'node-cron';
import type { Logger } from 'pino';
import type { Pool } from '../infra/postgres/pool.js';
import { runElected } from '../infra/postgres/election.js';
import type { ScheduledJob } from './job.js';

const SCHEDULER_LOCK = 'scheduler';

export interface SchedulerOptions {
  /** Where the leadership connection comes from: never the query pool. */
  readonly locks: Pool;
  readonly jobs: readonly ScheduledJob[];
  readonly logger: Logger;
  readonly signal: AbortSignal;
  readonly standbyRetryMs?: number;
}

/**
 * The scheduler role: one active instance across all processes (advisory lock `scheduler`), which runs
 * every job on its node-cron schedule, each at most once at a time, and those marked `atStart` at once.
 */
export function runScheduler(options: SchedulerOptions): Promise<void> {
  const logger = options.logger.child({ component: 'scheduler' });
  return runElected(
    options.locks,
    SCHEDULER_LOCK,
    async (leadership) => {
      const run = (job: ScheduledJob) =>
        job
          .run(leadership)
          .catch((error: unknown) => logger.error({ err: error, job: job.name }, 'job failed'));
      const tasks: ScheduledTask[] = options.jobs.map((job) =>
        cron.createTask(job.schedule, () => (leadership.aborted ? undefined : run(job)), {
          name: job.name,
          noOverlap: true,
          timezone: 'UTC',
          unref: true,
        }),
      );
      try {
        await Promise.all(options.jobs.filter((job) => job.atStart).map(run));
        for (const task of tasks) await task.start();
        await new Promise<void>((resolve) => {
          if (leadership.aborted) return resolve();
          leadership.addEventListener('abort', () => resolve(), { once: true });
        });
      } finally {
        for (const task of tasks) await task.destroy();
      }
    },
    { signal: options.signal, logger, standbyRetryMs: options.standbyRetryMs },
  );
}
