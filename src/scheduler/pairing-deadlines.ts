import { closePairingWindow } from '../pairing/windows.js';
import { listOpenSessions, type PairingSessionRow } from '../projections/pairing/queries.js';
import { deadlineSweepJob } from './deadline-sweep.js';
import type { JobDeps, ScheduledJob } from './job.js';

/**
 * Closes pairing windows at their deadline: a deadline sweep over the windows the read model shows open.
 * The close itself is decided on the hub's pairing stream: a window already closed records nothing.
 */
export function pairingDeadlinesJob(deps: JobDeps): ScheduledJob {
  const now = deps.now ?? (() => new Date());
  const logger = deps.logger.child({ job: 'pairing-deadlines' });

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

  return deadlineSweepJob({
    name: 'pairing-deadlines',
    now,
    due: () => listOpenSessions(deps.pool),
    deadlineOf: (session) => session.closesAt,
    keyOf: (session) => session.sessionId,
    act: close,
  });
}
