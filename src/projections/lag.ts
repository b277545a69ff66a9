import type { EventStore } from '../eventstore/port.js';
import type { Pool } from '../infra/postgres/pool.js';
import { readCheckpoint } from './checkpoints.js';
import type { Projector } from './projector.js';

/** Pending events are counted up to this many: past it, "at least" is all an operator needs. */
const LAG_EVENTS_COUNTED = 100_000;

/** How far one projector is behind the events it follows. */
export interface ProjectionLag {
  readonly projector: string;
  /** Events of its types not yet projected, at most LAG_EVENTS_COUNTED; null where the store cannot count. */
  readonly events: number | null;
  /** Age of the oldest event it has not projected yet (0 when none is waiting). */
  readonly seconds: number;
  /** When the oldest waiting event was recorded; null when none is waiting. */
  readonly oldestPendingAt: Date | null;
  readonly measuredAt: Date;
}

/** Where the api role reads the latest lag figures (the background monitor in production). */
export interface LagFigures {
  lagOf(projector: string): ProjectionLag | undefined;
  all(): ProjectionLag[];
}

/**
 * Lag measured from the store rather than from the projector process: it holds wherever the projectors
 * run, and a projector that stopped altogether shows a lag that grows instead of its last good figure.
 */
export async function measureLag(
  pool: Pool,
  store: EventStore,
  projector: Pick<Projector, 'name' | 'eventTypes'>,
  now: Date,
): Promise<ProjectionLag> {
  const after = (await readCheckpoint(pool, projector.name))?.position;
  const [page, events] = await Promise.all([
    store.readAll({ after, maxCount: 1, eventTypes: projector.eventTypes }),
    store.countEventsAfter?.(after, projector.eventTypes, LAG_EVENTS_COUNTED) ?? Promise.resolve(null),
  ]);
  const oldest = page.events[0]?.recordedAt ?? null;
  return {
    projector: projector.name,
    events,
    seconds: oldest ? Math.max(0, (now.getTime() - oldest.getTime()) / 1000) : 0,
    oldestPendingAt: oldest,
    measuredAt: now,
  };
}

/**
 * A partitioned projector's lag as one figure: its furthest-behind partition's. Each partition follows every
 * event of the projector's types, so its count already covers the others' waiting events.
 */
export function furthestBehind(projector: string, partitions: readonly ProjectionLag[]): ProjectionLag {
  const worst = partitions.reduce((a, b) =>
    b.seconds > a.seconds || (b.events ?? 0) > (a.events ?? 0) ? b : a,
  );
  return { ...worst, projector };
}
