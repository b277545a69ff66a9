import type { Logger } from 'pino';
import type { EventStore } from '../eventstore/port.js';
import type { Pool } from '../infra/postgres/pool.js';
import { closePairingWindow } from '../pairing/windows.js';
import { listOpenSessions, type PairingSessionRow } from '../projections/pairing/queries.js';
import type { ScheduledJob } from './job.js';

// setTimeout cannot wait longer than this; windows are at most 10 minutes anyway.
const MAX_TIMER_MS = 2 ** 31 - 1;
// Fire just after the deadline, so the decision (at >= deadline) never sees it a millisecond early.
const AFTER_DEADLINE_MS = 5;

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
  const timers = new Map<string, NodeJS.Timeout>();
  const terms = new WeakSet<AbortSignal>();

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
      if (!terms.has(leadership)) {
        terms.add(leadership);
        leadership.addEventListener('abort', () => {
          for (const timer of timers.values()) clearTimeout(timer);
          timers.clear();
        });
      }
      const sessions = await listOpenSessions(deps.pool);
      const at = now().getTime();
      for (const session of sessions) {
        const wait = session.closesAt.getTime() - at;
        if (wait <= 0) {
          await close(session);
        } else if (!timers.has(session.sessionId) && !leadership.aborted) {
          const timer = setTimeout(
            () => {
              timers.delete(session.sessionId);
              void close(session);
            },
            Math.min(wait + AFTER_DEADLINE_MS, MAX_TIMER_MS),
          );
          timer.unref();
          timers.set(session.sessionId, timer);
        }
      }
    },
  };
}
