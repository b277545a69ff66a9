import type { EventStore, SubscribeOptions, Subscription, SubscriptionBatch } from '../port.js';

/**
 * Catch-up-then-live subscription built on readAll: it pages until the end of the visible global order,
 * then sleeps until an append notification or the poll interval, whichever comes first. Notifications
 * only shorten the wait; polling alone delivers every event.
 */
export function subscribeByPolling(
  store: Pick<EventStore, 'readAll'>,
  options: SubscribeOptions,
  onAppend: (wake: () => void) => () => void,
  idlePollMs: number,
): Subscription {
  const batchSize = options.batchSize ?? 1000;
  return {
    async *[Symbol.asyncIterator](): AsyncGenerator<SubscriptionBatch> {
      let after = options.after;
      let signalledCaughtUp = false;
      let woken: boolean;
      let wake: (() => void) | undefined;
      const unregister = onAppend(() => {
        woken = true;
        wake?.();
      });
      try {
        while (!options.signal?.aborted) {
          woken = false;
          const page = await store.readAll({ after, maxCount: batchSize, eventTypes: options.eventTypes });
          if (page.lastPosition !== undefined) after = page.lastPosition;
          if (page.events.length > 0 || (page.atEnd && !signalledCaughtUp)) {
            signalledCaughtUp = page.atEnd;
            yield { events: page.events, checkpoint: after, caughtUp: page.atEnd };
          }
          if (!page.atEnd || woken || options.signal?.aborted) continue;
          await new Promise<void>((resolve) => {
            const timer = setTimeout(done, idlePollMs);
            options.signal?.addEventListener('abort', done, { once: true });
            wake = done;
            function done() {
              clearTimeout(timer);
              options.signal?.removeEventListener('abort', done);
              wake = undefined;
              resolve();
            }
          });
        }
      } finally {
        unregister();
      }
    },
  };
}
