import type { Logger } from 'pino';
import { decideExpiry } from '../domain/control/delivery-decisions.js';
import { controlFolding, type ControlEvent } from '../domain/control/index.js';
import { deviceStreamName } from '../domain/devices/decider.js';
import { decideOnStream } from '../eventstore/handle-command.js';
import type { EventStore } from '../eventstore/port.js';
import type { Pool } from '../infra/postgres/pool.js';
import { DeadlineTimers } from './deadline-timers.js';
import type { ScheduledJob } from './job.js';

/** Commands still pending by the commands read model whose TTL ends before the horizon, soonest first. */
const PENDING_DEADLINES = `
  SELECT command_id, device_id, expires_at FROM commands
   WHERE status IN ('queued', 'sent') AND expires_at <= $1
   ORDER BY expires_at
   LIMIT $2`;

/** Sweeps look this far ahead and arm timers for what ends within it. */
const HORIZON_MS = 60_000;
const MAX_PER_SWEEP = 5000;

interface Deadline {
  readonly commandId: string;
  readonly deviceId: string;
  readonly expiresAt: Date;
}

/**
 * Ends commands at their TTL, by the server's clock (docs/commands.md, "Delivery and outcome"). Each sweep
 * (at start-up, then every few seconds) expires what the commands read model shows pending past its
 * deadline, which also catches what passed while no scheduler ran, and arms a timer for each command whose
 * TTL ends within the next minute, so it expires on time rather than at the next sweep. The expiry itself is
 * decided on the device stream: a command that has an outcome by then records nothing.
 */
export function commandExpiryJob(deps: {
  store: EventStore;
  pool: Pool;
  logger: Logger;
  now?: () => Date;
}): ScheduledJob {
  const now = deps.now ?? (() => new Date());
  const logger = deps.logger.child({ job: 'command-expiry' });
  const timers = new DeadlineTimers();

  const expire = async (deadline: Deadline) => {
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

  return {
    name: 'command-expiry',
    schedule: '*/5 * * * * *',
    atStart: true,
    async run(leadership) {
      const at = now().getTime();
      const { rows } = await deps.pool.query<{ command_id: string; device_id: string; expires_at: Date }>(
        PENDING_DEADLINES,
        [new Date(at + HORIZON_MS), MAX_PER_SWEEP],
      );
      for (const row of rows) {
        const deadline = { commandId: row.command_id, deviceId: row.device_id, expiresAt: row.expires_at };
        const wait = deadline.expiresAt.getTime() - at;
        if (wait <= 0) {
          await expire(deadline);
        } else {
          timers.arm(leadership, deadline.commandId, wait, () => void expire(deadline));
        }
      }
    },
  };
}
