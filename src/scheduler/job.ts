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
