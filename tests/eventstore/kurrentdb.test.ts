import { randomUUID } from 'node:crypto';
import { createKurrentDbEventStore } from '../../src/eventstore/kurrentdb/adapter.js';
import { eventStoreContract } from './contract.js';

/**
 * The same contract against a real KurrentDB, when EVENTSTORE_URL names one (`docker compose up kurrentdb`;
 * .ci/run starts one where the CI machine has a Docker engine). Without a server every case is reported as
 * pending and the reason is printed, never silently absent.
 */
const url = process.env.EVENTSTORE_URL;
const kurrent = url && /^(kurrentdb|esdb)(\+discover)?:\/\//.test(url) ? url : undefined;

const KURRENTDB_SKIP_REASON =
  'KurrentDB contract skipped: EVENTSTORE_URL does not name a kurrentdb:// or esdb:// server ' +
  `(it is ${url ? 'set to another scheme' : 'unset'}); run \`docker compose up -d kurrentdb\` and set ` +
  'EVENTSTORE_URL=kurrentdb://127.0.0.1:2113?tls=false to run it';

describe('event store contract: KurrentDB adapter', function () {
  before(function () {
    if (!kurrent) {
      // Printed, so a run without the server says so in its output, not only as a count of pending tests.
      console.log(`      ${KURRENTDB_SKIP_REASON}`);
      this.skip();
    }
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
