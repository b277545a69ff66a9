import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import { createLogger } from '../../src/infra/logger.js';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/infra/postgres/embedded.js';
import { migrate } from '../../src/infra/postgres/migrate.js';
import { EVENT_STORE_FUNCTIONS } from '../../src/eventstore/postgres/functions/install-order.js';
import { createPool, type Pool } from '../../src/infra/postgres/pool.js';
import { freePort } from '../../src/infra/ports.js';
import { catchUpProjector } from '../../src/projections/catch-up.js';
import { readCheckpoint } from '../../src/projections/checkpoints.js';
import { commitBatch } from '../../src/projections/runner.js';
import { tallyProjector } from '../fixtures/tally-projector.js';
import { clusterDirectory } from '../support/run-directory.js';

const logger = createLogger('silent');
const TYPES = ['Ticked'];

/**
 * A live batch committed without waiting for the WAL flush (Projector.asynchronousCommit) is lost when
 * PostgreSQL crashes before its WAL is written, and the projector applies it again: the same totals, nothing
 * twice. The tally projector adds each batch onto running totals, so a batch half kept or applied twice
 * shows. Its own cluster, so the crash touches nothing else; the WAL writer is slowed to once in 10 s and
 * autovacuum is off, so nothing writes the batch's WAL between its commit and the crash.
 */
describe('a projector batch committed without waiting for the WAL flush, in a PostgreSQL crash', function () {
  this.timeout(120_000);
  let dir: string;
  let cluster: EmbeddedDatabase | undefined;
  let pool: Pool | undefined;
  let store: PostgresEventStore | undefined;

  before(async () => {
    dir = await clusterDirectory('async-commit');
  });
  after(async () => {
    await store?.close().catch(() => {});
    await pool?.end().catch(() => {});
    await cluster?.stop().catch(() => {});
    await rm(dir, { recursive: true, force: true });
  });

  async function open(port: number) {
    cluster = await startEmbeddedPostgres({
      dataDir: path.join(dir, 'pg'),
      port,
      logger,
      databaseName: 'devcloud',
    });
    pool = createPool(cluster.url, { max: 4 });
    store = new PostgresEventStore(pool, { connectionString: cluster.url });
  }

  async function appendTicks(count: number) {
    for (let i = 0; i < count; i++) {
      await store!.append(`clock-${i % 3}`, [{ id: randomUUID(), type: 'Ticked', data: { i } }], 'any');
    }
  }

  async function tallies(): Promise<Record<string, number>> {
    const { rows } = await pool!.query<{ stream_name: string; events: string }>(
      'SELECT stream_name, events FROM tally ORDER BY stream_name',
    );
    return Object.fromEntries(rows.map((r) => [r.stream_name, Number(r.events)]));
  }

  async function truth(): Promise<Record<string, number>> {
    const { rows } = await pool!.query<{ stream_name: string; n: string }>(
      'SELECT stream_name, count(*) AS n FROM eventstore.events WHERE event_type = ANY ($1) GROUP BY 1 ORDER BY 1',
      [TYPES],
    );
    return Object.fromEntries(rows.map((r) => [r.stream_name, Number(r.n)]));
  }

  /** The WAL positions PostgreSQL has inserted, written and flushed. */
  async function wal(): Promise<{ inserted: string; written: string; flushed: string }> {
    const { rows } = await pool!.query<{ inserted: string; written: string; flushed: string }>(
      `SELECT pg_current_wal_insert_lsn()::text AS inserted, pg_current_wal_lsn()::text AS written,
              pg_current_wal_flush_lsn()::text AS flushed`,
    );
    return rows[0]!;
  }

  async function lsnBehind(a: string, b: string): Promise<boolean> {
    const { rows } = await pool!.query<{ behind: boolean }>('SELECT $1::pg_lsn < $2::pg_lsn AS behind', [
      a,
      b,
    ]);
    return rows[0]!.behind;
  }

  /** Whether a process runs: gone, or ended and not yet reaped (a zombie), counts as stopped. */
  function running(pid: number): boolean {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return stat.charAt(stat.lastIndexOf(')') + 2) !== 'Z';
    } catch {
      return false;
    }
  }

  it('is applied again from the event store after the restart, exactly once', async () => {
    const port = await freePort();
    await open(port);
    await migrate(pool!, EVENT_STORE_FUNCTIONS);
    await pool!.query(`ALTER SYSTEM SET wal_writer_delay = '10s'`);
    await pool!.query(`ALTER SYSTEM SET wal_writer_flush_after = '1GB'`);
    await pool!.query(`ALTER SYSTEM SET autovacuum = off`);
    await pool!.query('SELECT pg_reload_conf()');
    const dataDirectory = (await pool!.query<{ d: string }>("SELECT current_setting('data_directory') AS d"))
      .rows[0]!.d;
    const projector = { ...tallyProjector(TYPES), asynchronousCommit: true };

    // The first batch, then until the WAL writer has flushed it: it sleeps 10 s from there.
    await appendTicks(6);
    await catchUpProjector(pool!, store!, projector, 1000);
    const first = await wal();
    const deadline = Date.now() + 30_000;
    while (await lsnBehind((await wal()).flushed, first.inserted)) {
      if (Date.now() > deadline) throw new Error('the WAL writer never flushed the first batch');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const kept = (await readCheckpoint(pool!, projector.name))!.position;
    const keptTallies = await tallies();

    // The second batch: its events are durable (appends wait for the flush); none of its WAL is written yet.
    // It is committed by commitBatch itself, so nothing but the batch runs between the two WAL readings.
    await appendTicks(9);
    const { events } = await store!.readAll({ after: kept, maxCount: 1000, eventTypes: TYPES });
    expect(events, 'the second batch').to.have.length(9);
    const beforeBatch = (await wal()).inserted;
    const next = events.at(-1)!.position;
    expect(await commitBatch(pool!, projector, kept, events, next, { eventStore: 'postgres' })).to.equal(
      true,
    );
    expect((await readCheckpoint(pool!, projector.name))!.position, 'the second batch committed').to.equal(
      next,
    );
    const after = await wal();
    expect(await lsnBehind(beforeBatch, after.inserted), 'the batch wrote WAL').to.equal(true);
    expect(
      await lsnBehind(beforeBatch, after.written),
      "nothing of the second batch's WAL, its commit included, is written",
    ).to.equal(false);
    const postmasterPid = Number(
      (await readFile(path.join(dataDirectory, 'postmaster.pid'), 'utf8')).split('\n')[0],
    );
    process.kill(postmasterPid, 'SIGQUIT'); // immediate shutdown: no checkpoint, WAL buffers dropped
    await store!.close().catch(() => {});
    await pool!.end().catch(() => {});
    for (const stop = Date.now() + 30_000; running(postmasterPid);) {
      if (Date.now() > stop) throw new Error('PostgreSQL did not stop on SIGQUIT');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }

    await open(port);
    expect(
      (await readCheckpoint(pool!, projector.name))!.position,
      'the crash undid the second batch, with its checkpoint',
    ).to.equal(kept);
    expect(await tallies(), 'and its rows').to.deep.equal(keptTallies);
    expect(
      Object.values(await truth()).reduce((a, b) => a + b, 0),
      'no event was lost',
    ).to.equal(15);

    await catchUpProjector(pool!, store!, projector, 1000);
    expect(await tallies(), 'applied again, once').to.deep.equal(await truth());
  });
});
