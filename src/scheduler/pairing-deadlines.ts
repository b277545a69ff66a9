import type { Logger } from 'pino';
import type { EventStore } from '../eventstore/port.js';
import type { Pool } from '../infra/postgres/pool.js';
import { closePairingWindow } from '../pairing/windows.js';
import { listOpenSessions, type PairingSessionRow } from '../projections/pairing/queries.js';
import { DeadlineTimers } from './deadline-timers.js';
import type { ScheduledJob } from './job.js';

/**
 * Closes pairing windows at their deadline. Each sweep (at start-up, then every few seconds) closes every
 * window the read model shows open past its deadline, which also catches what passed while no scheduler
 * ran, and arms a timer for each window still open so it closes on time rather than at the next sweep.
 * The close itself is decided on the hub's pairing stream: a window already closed records nothing.
 */
export function pairingDeadlinesJob(deps: {
  store: EventStore;
  pool: Pool;
  logger: Logger;
  now?: () => Date;
}): ScheduledJob {
  const now = deps.now ?? (() => new Date());
  const logger = deps.logger.child({ job: 'pairing-deadlines' });
  const timers = new DeadlineTimers();

  const close = async (session: PairingSessionRow) => {
    try {
      const { closed } = await closePairingWindow(
        deps.store,
        { hubId: session.hubId, sessionId: session.sessionId, reason: 'deadline', now: now() },
        { source: 'scheduler' },
      );
      if (closed)
        logger.info(
          { sessionId: session.sessionId, hubId: session.hubId },
          'pairing window closed at its deadline',
        );
    } catch (error) {
      logger.error({ err: error, sessionId: session.sessionId }, 'closing pairing window failed');
    }
  };

  return {
    name: 'pairing-deadlines',
    schedule: '*/5 * * * * *',
    atStart: true,
    async run(leadership) {
      const sessions = await listOpenSessions(deps.pool);
      const at = now().getTime();
      for (const session of sessions) {
        const wait = session.closesAt.getTime() - at;
        if (wait <= 0) {
          await close(session);
        } else {
          timers.arm(leadership, session.sessionId, wait, () => void close(session));
        }
      }
    },
  };
}
