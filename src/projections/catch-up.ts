import type { EventStore, RecordedEvent } from '../eventstore/port.js';
import { pageReader } from '../eventstore/read-ahead.js';
import type { Pool } from '../infra/postgres/pool.js';
import { installProjector, readCheckpoint } from './checkpoints.js';
import type { Projector } from './projector.js';
import { commitBatch } from './runner.js';

/**
 * Brings one projector exactly to the head the store had when the call began (or to `until`), never past
 * it, batch by batch with the same compare-and-set commit the runner uses, so it is safe next to a running
 * server: a batch another instance got in first is simply re-read from the checkpoint it left. Returns only
 * once the checkpoint has reached that position; an `until` not yet visible to readers (an older
 * transaction still open) is waited for, up to `timeoutMs`. Used by CLI reads, by repartitioning (which
 * needs every partition at one position) and by tests.
 */
export async function catchUpProjector(
  pool: Pool,
  store: EventStore,
  projector: Projector,
  batchSize = 2000,
  until?: string,
  timeoutMs = 30_000,
): Promise<void> {
  await installProjector(pool, projector);
  const target = until ?? (await store.headPosition());
  if (target === undefined) return;
  const beyond = (position: string) => store.comparePositions(position, target) > 0;
  const deadline = Date.now() + timeoutMs;
  const pages = pageReader(
    store,
    { maxCount: batchSize, eventTypes: projector.eventTypes, dataAsStored: projector.dataAsStored },
    { prepare: projector.prepare?.bind(projector) },
  );
  for (let pause = 5; ;) {
    const position = (await readCheckpoint(pool, projector.name))?.position;
    if (position !== undefined && store.comparePositions(position, target) >= 0) return;
    const page = await pages.read(position);
    if (page.lastPosition !== undefined && page.lastPosition !== position) {
      const last = beyond(page.lastPosition);
      // The next page is read while this one commits; another instance committing first makes it unused.
      if (!last && !page.atEnd) pages.readAhead(page.lastPosition);
      // Positions rise through a page: only a page that ends beyond the target needs looking into.
      const events = last ? page.events.filter((event) => !beyond(event.position)) : page.events;
      // What was prepared for the page is used only if `events` are still all of it (Projector.prepare).
      const next = last ? target : page.lastPosition;
      await commitBatch(pool, projector, position, events, next, {
        prepared: page.prepared,
        eventStore: store.kind,
      });
      continue;
    }
    if (Date.now() >= deadline) throw new Error(`projector ${projector.name}: ${target} not visible in time`);
    await new Promise((resolve) => setTimeout(resolve, pause));
    pause = Math.min(pause * 2, 100);
  }
}

/**
 * Waits until a projector's checkpoint has reached `position`, so a write can answer only once the caller
 * will read it back. Gives up quietly after `timeoutMs`: the write itself already succeeded.
 */
export function waitForProjection(
  pool: Pool,
  store: EventStore,
  projectorName: string,
  position: string,
  timeoutMs = 3000,
): Promise<boolean> {
  return pollUntil(async () => {
    const checkpoint = (await readCheckpoint(pool, projectorName))?.position;
    return checkpoint !== undefined && store.comparePositions(checkpoint, position) >= 0;
  }, timeoutMs);
}

/** The oldest event of the projector's types beyond its checkpoint, as far as events are visible now. */
export async function firstPending(
  pool: Pool,
  store: EventStore,
  projector: Pick<Projector, 'name' | 'eventTypes'>,
): Promise<RecordedEvent | undefined> {
  const after = (await readCheckpoint(pool, projector.name))?.position;
  return (await store.readAll({ after, maxCount: 1, eventTypes: projector.eventTypes })).events[0];
}

/**
 * Whether no event of the projector's types lies beyond its checkpoint, as far as events are visible now.
 * A checkpoint need not reach the store's head for this: events of other types do not move it.
 */
export async function isCaughtUp(
  pool: Pool,
  store: EventStore,
  projector: Pick<Projector, 'name' | 'eventTypes'>,
): Promise<boolean> {
  return (await firstPending(pool, store, projector)) === undefined;
}

/** Waits until isCaughtUp holds, polling; false once `timeoutMs` has passed without it. */
export function waitUntilCaughtUp(
  pool: Pool,
  store: EventStore,
  projector: Pick<Projector, 'name' | 'eventTypes'>,
  timeoutMs: number,
): Promise<boolean> {
  return pollUntil(() => isCaughtUp(pool, store, projector), timeoutMs);
}

/**
 * Waits until the projector has applied every event of its types up to `position` (inclusive), polling;
 * false once `timeoutMs` has passed without it. Unlike waitUntilCaughtUp it does not wait for events
 * appended after `position`, so a steady stream of newer ones cannot hold it back.
 */
export function waitUntilProjectedThrough(
  pool: Pool,
  store: EventStore,
  projector: Pick<Projector, 'name' | 'eventTypes'>,
  position: string,
  timeoutMs: number,
): Promise<boolean> {
  return pollUntil(async () => {
    const pending = await firstPending(pool, store, projector);
    return pending === undefined || store.comparePositions(pending.position, position) > 0;
  }, timeoutMs);
}

/** Polls `probe` with a pause growing from 5 to 100 ms until it holds; false once `timeoutMs` has passed. */
async function pollUntil(probe: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (let pause = 5; ; pause = Math.min(pause * 2, 100)) {
    if (await probe()) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}
