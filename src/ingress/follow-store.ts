import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { EventStore, RecordedEvent } from '../eventstore/port.js';

const RESUBSCRIBE_MS = 1000;

/**
 * Follows the event store's global order from its head (what happened before this process started is the
 * business of whoever catches up on reconnect), handing each batch of these event types to `onBatch`, and
 * resubscribing after a failure. Resolves when the signal aborts.
 */
export async function followStoreFromHead(options: {
  readonly store: EventStore;
  readonly eventTypes: readonly string[];
  readonly signal: AbortSignal;
  readonly logger: Logger;
  readonly onBatch: (events: readonly RecordedEvent[]) => Promise<void>;
}): Promise<void> {
  const { store, signal, logger } = options;
  let after: string | undefined;
  let started = false;
  while (!signal.aborted) {
    try {
      if (!started) after = await store.headPosition();
      started = true;
      for await (const batch of store.subscribeToAll({ after, eventTypes: options.eventTypes, signal })) {
        if (batch.events.length > 0) await options.onBatch(batch.events);
        if (batch.checkpoint !== undefined) after = batch.checkpoint;
      }
    } catch (error) {
      if (signal.aborted) return;
      logger.error({ err: error }, 'event subscription failed; resubscribing');
      await sleep(RESUBSCRIBE_MS, undefined, { signal }).catch(() => undefined);
    }
  }
}
