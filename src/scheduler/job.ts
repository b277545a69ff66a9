import type { Logger } from 'pino';
import type { EventStore } from '../eventstore/port.js';
import type { Pool } from '../infra/postgres/pool.js';

/** A job the active scheduler runs (see scheduler.ts). */
export interface ScheduledJob {
  readonly name: string;
  /** node-cron 4 expression; a leading sixth field is seconds. Evaluated in UTC. */
  readonly schedule: string;
  /** Also run once as soon as this instance becomes the active scheduler, to catch up after downtime. */
  readonly atStart: boolean;
  /** `leadership` aborts when this instance stops being the active scheduler; drop any timers then. */
  run(leadership: AbortSignal): Promise<void>;
}

/** What a job that decides on streams from what a read model shows is given. */
export interface JobDeps {
  readonly store: EventStore;
  readonly pool: Pool;
  readonly logger: Logger;
  /** The job's clock; the server's by default. */
  readonly now?: () => Date;
}
