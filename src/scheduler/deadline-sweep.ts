import { DeadlineTimers } from './deadline-timers.js';
import type { ScheduledJob } from './job.js';

/**
 * A job that meets deadlines: each sweep (at start-up, then every five seconds) acts on every item whose
 * deadline has passed, which also catches what passed while no scheduler ran, and arms a timer for each
 * item still ahead, so it is met on time rather than at the next sweep. The timers belong to the
 * leadership term that armed them. `act` decides on the item's own stream, so acting twice records nothing
 * the second time; it logs its own failures and never throws.
 */
export function deadlineSweepJob<Item>(job: {
  readonly name: string;
  readonly now: () => Date;
  /** The items to look at, given the sweep's instant (ms since the epoch). */
  readonly due: (at: number) => Promise<readonly Item[]>;
  readonly deadlineOf: (item: Item) => Date;
  /** One timer per key. */
  readonly keyOf: (item: Item) => string;
  readonly act: (item: Item) => Promise<void>;
}): ScheduledJob {
  const timers = new DeadlineTimers();
  return {
    name: job.name,
    schedule: '*/5 * * * * *',
    atStart: true,
    async run(leadership) {
      const at = job.now().getTime();
      for (const item of await job.due(at)) {
        const wait = job.deadlineOf(item).getTime() - at;
        if (wait <= 0) {
          await job.act(item);
        } else {
          timers.arm(leadership, job.keyOf(item), wait, () => void job.act(item));
        }
      }
    },
  };
}
