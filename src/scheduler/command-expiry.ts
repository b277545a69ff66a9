import { decideExpiry } from '../domain/control/delivery-decisions.js';
import { controlFolding, type ControlEvent } from '../domain/control/index.js';
import { deviceStreamName } from '../domain/devices/decider.js';
import { decideOnStream } from '../eventstore/handle-command.js';
import { listPendingDeadlines, type CommandDeadline } from '../projections/commands/queries.js';
import { deadlineSweepJob } from './deadline-sweep.js';
import type { JobDeps, ScheduledJob } from './job.js';

/** Sweeps look this far ahead and arm timers for what ends within it. */
const HORIZON_MS = 60_000;
const MAX_PER_SWEEP = 5000;

/**
 * Ends commands at their TTL, by the server's clock (docs/commands.md, "Delivery and outcome"): a deadline
 * sweep over the commands the read model shows pending whose TTL ends within the next minute. The expiry
 * itself is decided on the device stream: a command that has an outcome by then records nothing.
 */
export function commandExpiryJob(deps: JobDeps): ScheduledJob {
  const now = deps.now ?? (() => new Date());
  const logger = deps.logger.child({ job: 'command-expiry' });

  const expire = async (deadline: CommandDeadline) => {
    try {
      const { appended } = await decideOnStream(
        deps.store,
        deviceStreamName(deadline.deviceId),
        controlFolding,
        (state) => ({ events: decideExpiry(state, now()) as ControlEvent[], result: undefined }),
        { metadata: { source: 'scheduler' } },
      );
      if (appended.length > 0) logger.debug({ ...deadline }, 'command expired');
    } catch (error) {
      logger.error({ err: error, commandId: deadline.commandId }, 'expiring a command failed');
    }
  };

  return deadlineSweepJob({
    name: 'command-expiry',
    now,
    due: (at) => listPendingDeadlines(deps.pool, new Date(at + HORIZON_MS), MAX_PER_SWEEP),
    deadlineOf: (deadline) => deadline.expiresAt,
    keyOf: (deadline) => deadline.commandId,
    act: expire,
  });
}
