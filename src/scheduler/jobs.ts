import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { EventStore } from '../eventstore/port.js';
import type { Pool } from '../infra/postgres/pool.js';
import { auditCheckpointJob } from './audit-checkpoints.js';
import { commandExpiryJob } from './command-expiry.js';
import type { ScheduledJob } from './job.js';
import { pairingDeadlinesJob } from './pairing-deadlines.js';
import { retentionJobs } from './retention-jobs.js';

export interface JobDependencies {
  readonly config: Config;
  readonly store: EventStore;
  readonly pool: Pool;
  readonly logger: Logger;
  /** The service's clock (tests run the whole service on one moved clock); the system clock by default. */
  readonly now?: () => Date;
}

/**
 * Every job of the scheduler role, in one list: a feature with periodic work adds its job here
 * (docs/scheduler.md lists them with their schedules). Staleness needs no job: the state endpoint marks
 * a value stale when it is read.
 */
export function scheduledJobs(deps: JobDependencies): ScheduledJob[] {
  return [
    pairingDeadlinesJob(deps),
    commandExpiryJob(deps),
    ...retentionJobs(deps),
    auditCheckpointJob(deps),
  ];
}
