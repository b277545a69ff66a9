import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import pg from 'pg';
import type { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import { createLogger } from '../../src/infra/logger.js';
import { runProjector } from '../../src/projections/runner.js';
import type { TestDatabase } from '../support/database.js';
import { closeEventStore, openEventStore } from '../support/event-store.js';
import { tallyProjector } from '../fixtures/tally-projector.js';

const TYPES = ['Ticked'];
const LEADER_KEY = 'projector:tally';
/** Sessions holding the projector's own leadership lock (see leaderPid). */
const LEADER_PIDS = `
  SELECT l.pid FROM pg_locks l
    JOIN pg_database d ON d.oid = l.database
    JOIN pg_stat_activity a ON a.pid = l.pid
   WHERE l.locktype = 'advisory' AND l.granted AND d.datname = current_database()
     AND l.objid::bigint = (hashtext($1)::bigint & 4294967295)`;
const logger = createLogger('silent');

async function waitFor<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * A database restart, a failover or an operator's pg_terminate_backend ends every connection the service
 * holds: the leadership connections and the query connections in the middle of a transaction alike. Each of
 * them must fail only its own work; the process lives on, elects again and projects every event exactly once.
 */
describe('connections that lose their server', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  let admin: pg.Client;
  /** Stops what the test started, also when it failed half-way: else its runner would outlive the suite. */
  let stop: (() => Promise<unknown>) | undefined;
  beforeEach(async () => {
    ({ db, store } = await openEventStore({ idlePollMs: 20 }));
    admin = new pg.Client({ connectionString: db.url, application_name: 'test-admin' });
    await admin.connect();
  });
  afterEach(async function () {
    this.timeout(60_000); // a batch may be inside its pg_sleep when the test fails
    await stop?.();
    stop = undefined;
    await admin.end();
    await closeEventStore({ db, store });
  });

  /**
   * The holder of the projector's own leadership lock. Other advisory locks come and go (installing a
   * projector takes a transaction lock), and a backend terminated in the previous round may still be listed
   * while it exits: only the leadership key, held by a live session, names the leader.
   */
  async function leaderPid(): Promise<number | undefined> {
    const { rows } = await admin.query<{ pid: number }>(LEADER_PIDS, [LEADER_KEY]);
    return rows.length === 1 ? rows[0]!.pid : undefined;
  }

  it('survives the termination of every connection, mid-transaction and while leading, and loses nothing', async function () {
    this.timeout(90_000);
    // While `holding`, a batch transaction waits inside PostgreSQL until the connection is cut.
    let holding = false;
    let inBatch = false;
    const tally = tallyProjector(TYPES);
    const projector = {
      ...tally,
      async apply(events: Parameters<typeof tally.apply>[0], client: Parameters<typeof tally.apply>[1]) {
        await tally.apply(events, client);
        if (!holding) return;
        inBatch = true;
        await client.query('SELECT pg_sleep(30)');
      },
    };
    const controller = new AbortController();
    const running = runProjector(db.pool, store, projector, {
      batchSize: 100,
      locks: db.locks,
      signal: controller.signal,
      logger,
      standbyRetryMs: 50,
    });

    let appending = true;
    let appendFailures = 0;
    const load = (async () => {
      // Until the rounds are done (not a count): a fast machine must not run out of batches to cut into.
      for (let i = 0; appending; i++) {
        await store
          .append(`clock-${i % 7}`, [{ id: randomUUID(), type: 'Ticked', data: { i } }], 'any')
          .catch(() => appendFailures++);
      }
    })();
    stop = () => {
      appending = false;
      controller.abort();
      return Promise.allSettled([load, running]);
    };

    const leaders: number[] = [];
    // A round counts when it cut a leader; one that found leadership changing hands is tried again.
    for (let round = 0, attempt = 0; round < 5; attempt++) {
      expect(attempt, 'rounds that found no leader to cut').to.be.below(15);
      const leader = await waitFor(async () => {
        const pid = await leaderPid();
        return pid !== undefined && !leaders.includes(pid) ? pid : undefined;
      }, `a newly elected leader (round ${round})`);
      expect(leader).to.be.a('number');
      inBatch = false;
      holding = true;
      await waitFor(async () => {
        if (!inBatch) return undefined;
        const { rows } = await admin.query(
          `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND state = 'active'
              AND query LIKE 'SELECT pg_sleep%'`,
        );
        return rows.length > 0 ? true : undefined;
      }, 'a batch transaction in flight inside PostgreSQL');
      // Who leads is read in the same statement that cuts the connections: a leader that stepped down after
      // a failed batch (its query connection was cut in the previous round) is not the one to check.
      const { rows } = await admin.query<{
        pid: number;
        query: string;
        is_leader: boolean;
        terminated: boolean;
      }>(
        `WITH leader AS (${LEADER_PIDS})
         SELECT a.pid, a.query, a.pid IN (SELECT pid FROM leader) AS is_leader,
                pg_terminate_backend(a.pid) AS terminated
           FROM pg_stat_activity a
          WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()`,
        [LEADER_KEY],
      );
      // The fault really happened: the leader's connection and one inside a transaction were cut.
      const cutLeader = rows.find((r) => r.is_leader && r.terminated);
      holding = false;
      // No leader at that instant, or its backend was already on its way out: this round cut no leader.
      if (!cutLeader) continue;
      leaders.push(cutLeader.pid);
      const batch = rows.find((r) => r.query.startsWith('SELECT pg_sleep'));
      expect(batch?.terminated, 'the batch transaction terminated').to.equal(true);
      round++;
    }
    appending = false;
    await load;

    const { rows: truth } = await admin.query<{ n: string }>(
      `SELECT count(*) AS n FROM eventstore.events WHERE event_type = 'Ticked'`,
    );
    await waitFor(async () => {
      const { rows } = await admin.query<{ n: string | null }>('SELECT sum(events) AS n FROM tally');
      return rows[0]!.n === truth[0]!.n ? true : undefined;
    }, 'the tally to reach every stored event');
    controller.abort();
    await running;
    const { rows } = await admin.query<{ n: string }>('SELECT sum(events) AS n FROM tally');
    expect(rows[0]!.n, 'each stored event projected exactly once').to.equal(truth[0]!.n);
    expect(Number(truth[0]!.n)).to.be.greaterThan(0);
    expect(leaders).to.have.length(5);
  });
});
