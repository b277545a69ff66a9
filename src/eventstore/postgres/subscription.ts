import type { EventStore, SubscribeOptions, Subscription, SubscriptionBatch } from '../port.js';
import { pageReader } from '../read-ahead.js';
import { concerns, type AppendNotice } from './append-notice.js';

/**
 * Retries after a read that did not yet see an announced transaction: the first, doubling up to the longest,
 * for as long as the chase lasts. Apart from the idle poll, which is long (a safety net only): an event held
 * back by an older open transaction arrives within HIDDEN_RETRY_MAX_MS (or the idle poll, if shorter) of that
 * transaction's end.
 */
const HIDDEN_RETRY_FIRST_MS = 2;
const HIDDEN_RETRY_MAX_MS = 250;
const HIDDEN_CHASE_MS = 10_000;

/** A subscription's hold on the store's append notifications. */
export interface AppendWakeup {
  /** Settles once notifications are received (or could not be, and polling alone delivers). */
  readonly listening: Promise<void>;
  stop(): void;
}

function delay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
  });
}

/**
 * Catch-up-then-live subscription built on readAll: it pages until the end of the visible global order,
 * then sleeps until an append notification of one of its event types or the poll interval, whichever comes
 * first. Notifications only shorten the wait; polling alone delivers every event.
 *
 * A notification can arrive before its events are visible: any older transaction still open on the server
 * (a projector's batch, which sends no notification when it ends) holds the read horizon back. The
 * notification names the lowest position its transaction's events can have (`committedFrom`); while the
 * visible head has not reached the newest one announced, the subscription reads again soon, backing off
 * from HIDDEN_RETRY_FIRST_MS, instead of sleeping the whole idle interval with an announced event waiting.
 */
export function subscribeByPolling(
  store: Pick<EventStore, 'readAll'>,
  options: SubscribeOptions,
  onAppend: (wake: (notice: AppendNotice) => void) => AppendWakeup,
  idlePollMs: number,
): Subscription {
  const batchSize = options.batchSize ?? 1000;
  return {
    async *[Symbol.asyncIterator](): AsyncGenerator<SubscriptionBatch> {
      let after = options.after;
      let signalledCaughtUp = false;
      let woken = false;
      let wake: (() => void) | undefined;
      let readStartedAt = 0;
      // When the last read that delivered events began: coalescing counts from it (minReadIntervalMs).
      let deliveredReadAt = 0;
      // The newest announced position not yet seen to be visible, and the current retry delay for it.
      let awaited: string | undefined;
      let retryMs = 0;
      let chasedSince = 0;
      const wakeup = onAppend((notice) => {
        if (!concerns(notice, options.eventTypes)) return;
        const { committedFrom } = notice;
        if (committedFrom !== undefined && (awaited === undefined || committedFrom > awaited)) {
          awaited = committedFrom;
        }
        woken = true;
        wake?.();
      });
      // A notification counts only if it came after the read that could have missed its events began.
      const pages = pageReader(
        store,
        { maxCount: batchSize, eventTypes: options.eventTypes, dataAsStored: options.dataAsStored },
        {
          onStoreRead: () => {
            woken = false;
            // A monotonic clock: a step of the wall clock must not stretch the coalescing wait.
            readStartedAt = performance.now();
          },
          prepare: options.prepare,
        },
      );
      // An append between the first read and LISTEN is announced to no one: once listening, read again.
      const listened = () => {
        woken = true;
        wake?.();
      };
      void wakeup.listening.then(listened, listened);
      try {
        while (!options.signal?.aborted) {
          const page = await pages.read(after);
          if (page.lastPosition !== undefined) after = page.lastPosition;
          // Before a read ahead begins, which would move readStartedAt.
          if (page.events.length > 0) deliveredReadAt = readStartedAt;
          // Behind: the next page is read while the consumer handles this one.
          if (!page.atEnd) pages.readAhead(after);
          if (page.events.length > 0 || (page.atEnd && !signalledCaughtUp)) {
            signalledCaughtUp = page.atEnd;
            yield { events: page.events, checkpoint: after, caughtUp: page.atEnd, prepared: page.prepared };
          }
          if (!page.atEnd || options.signal?.aborted) continue;
          if (!woken) {
            if (awaited !== undefined && (after === undefined || after < awaited)) {
              if (retryMs === 0) chasedSince = performance.now();
              // Never longer than the idle poll, which would have read by then anyway.
              const longest = Math.min(HIDDEN_RETRY_MAX_MS, idlePollMs);
              retryMs = Math.min(longest, Math.max(HIDDEN_RETRY_FIRST_MS, retryMs * 2));
              // Events deleted before anyone read them never become visible: the chase ends; polling goes on.
              if (performance.now() - chasedSince >= HIDDEN_CHASE_MS) {
                awaited = undefined;
                retryMs = 0;
              }
            } else {
              awaited = undefined;
              retryMs = 0;
            }
            await new Promise<void>((resolve) => {
              const timer = setTimeout(done, awaited === undefined ? idlePollMs : retryMs);
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
          // Woken by an append (while the batch was applied, or since) soon after a read that delivered
          // events: the appends announced meanwhile join the next read. A lone append after a quiet spell
          // is read at once, as reads that found nothing do not count.
          const coalesce = deliveredReadAt + (options.minReadIntervalMs ?? 0) - performance.now();
          if (woken && coalesce > 0) await delay(coalesce, options.signal);
        }
      } finally {
        wakeup.stop();
      }
    },
  };
}
