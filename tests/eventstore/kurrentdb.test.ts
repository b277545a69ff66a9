import { randomUUID } from 'node:crypto';
import { createKurrentDbEventStore } from '../../src/eventstore/kurrentdb/adapter.js';
import { eventStoreContract } from './contract.js';

/**
 * The same contract against a real KurrentDB, when EVENTSTORE_URL names one (`docker compose up kurrentdb`).
 * Without a server every case is reported as pending, never silently absent.
 */
const url = process.env.EVENTSTORE_URL;
const kurrent = url && /^(kurrentdb|esdb)(\+discover)?:\/\//.test(url) ? url : undefined;

describe('event store contract: KurrentDB adapter', function () {
  before(function () {
    if (!kurrent) this.skip();
  });

  eventStoreContract(async () => {
    const store = createKurrentDbEventStore(kurrent!);
    return {
      store,
      globalEventIdUniqueness: false,
      // KurrentDB orders appends itself; a burst is many concurrent appends to distinct streams.
      async burst(transactions, eachCount) {
        const ids: string[] = [];
        await Promise.all(
          Array.from({ length: transactions }, async () => {
            const events = Array.from({ length: eachCount }, () => ({
              id: randomUUID(),
              type: 'Burst',
              data: {},
            }));
            ids.push(...events.map((e) => e.id));
            await store.append(`burst-${randomUUID()}`, events, 'any');
          }),
        );
        return ids;
      },
      close: () => store.close(),
    };
  });
});
