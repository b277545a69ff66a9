import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import { auditProjector } from '../../src/projections/audit/projector.js';
import { catchUpProjector } from '../../src/projections/catch-up.js';
import { readCheckpoint } from '../../src/projections/checkpoints.js';
import { replayIntoSchema } from '../../src/projections/replay.js';
import type { Pool, PoolClient } from '../../src/infra/postgres/pool.js';
import { watchingBatches } from '../support/batch-watch.js';
import type { TestDatabase } from '../support/database.js';
import { devcloudLines } from '../support/devcloud.js';
import { closeEventStore, openEventStore } from '../support/event-store.js';

describe('devcloud projections rebuild', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  const total = 20_000;

  before(async function () {
    this.timeout(120_000);
    ({ db, store } = await openEventStore());
    for (let b = 0; b < total / 1000; b++) {
      const events = Array.from({ length: 1000 }, (_, i) => ({
        id: randomUUID(),
        type: 'ProjectCreated',
        data: { projectId: `prj_bench${b}x${i}`, name: `project ${b}-${i}` },
      }));
      await store.append(`project-bench-${b}`, events, 'no_stream');
    }
    await catchUpProjector(db.pool, store, auditProjector());
  });
  after(async () => {
    await closeEventStore({ db, store });
  });

  /** The indexes of `schema.audit_log`, by name. */
  async function auditIndexes(schema: string, client: Pool | PoolClient = db.pool) {
    const { rows } = await client.query<{ indexname: string }>(
      `SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'audit_log' ORDER BY 1`,
      [schema],
    );
    return rows.map((r) => r.indexname);
  }

  it('keeps readers of the projection getting complete answers while it runs, then swaps in an identical table', async function () {
    this.timeout(120_000);
    const indexesBefore = await auditIndexes('public');
    expect(indexesBefore).to.include.members(['audit_log_stream', 'audit_log_type_time']);
    const before = (
      await db.pool.query('SELECT position, event_id, event_type, data FROM audit_log ORDER BY position')
    ).rows;
    expect(before).to.have.length(total);

    let rebuilding = true;
    const answers: number[] = [];
    const readers = Array.from({ length: 3 }, async () => {
      while (rebuilding) {
        const { rows } = await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM audit_log');
        answers.push(Number(rows[0]!.n));
      }
    });
    const rebuild = await devcloudLines(['projections', 'rebuild', 'audit', '--json'], db.url, 500);
    rebuilding = false;
    await Promise.all(readers);

    expect(rebuild.code, rebuild.stderr).to.equal(0);
    expect(answers.length, 'readers kept querying during the rebuild').to.be.greaterThan(10);
    expect(
      answers.every((n) => n === total),
      `every answer complete (saw ${[...new Set(answers)].join(', ')})`,
    ).to.equal(true);

    const progress = rebuild.lines.map(
      (l) => JSON.parse(l) as { eventsApplied: number; done: boolean; eventsPerSecond: number },
    );
    expect(progress.at(-1)).to.include({ eventsApplied: total, done: true });
    expect(progress.at(-1)!.eventsPerSecond).to.be.greaterThan(0);

    const after = (
      await db.pool.query('SELECT position, event_id, event_type, data FROM audit_log ORDER BY position')
    ).rows;
    expect(after).to.deep.equal(before);
    expect(await auditIndexes('public'), 'the swapped-in table has every index').to.deep.equal(indexesBefore);
    expect((await readCheckpoint(db.pool, 'audit'))!.position).to.equal(await store.headPosition());
    const shadows = await db.pool.query(`SELECT 1 FROM pg_namespace WHERE nspname LIKE 'rebuild_%'`);
    expect(shadows.rowCount, 'the shadow schema is gone').to.equal(0);
  });

  it('replays without the query indexes and builds them after the last batch', async function () {
    this.timeout(120_000);
    const { projector, seen: seenWhileApplying } = watchingBatches(auditProjector(), (client) =>
      auditIndexes('replay_query_indexes', client),
    );
    const replayed = await replayIntoSchema(db.pool, store, projector, 'replay_query_indexes', {
      batchSize: 5000,
    });
    try {
      expect(replayed.applied).to.equal(total);
      expect(seenWhileApplying, 'one look per batch').to.have.length(total / 5000);
      for (const seen of seenWhileApplying) expect(seen).to.deep.equal(['audit_log_pkey']);
      expect(await auditIndexes('replay_query_indexes')).to.deep.equal(await auditIndexes('public'));
    } finally {
      await db.pool.query('DROP SCHEMA replay_query_indexes CASCADE');
    }
  });

  it('refuses to rebuild a read model that outlives the readings, with a one-line reason', async () => {
    const result = await devcloudLines(['projections', 'rebuild', 'telemetry'], db.url, 500);
    expect(result.code).to.equal(1);
    expect(result.stderr.trim().split('\n')).to.have.length(1);
    expect(result.stderr).to.match(/telemetry keeps history older than the events/);
  });

  it('reports an unknown projector as a one-line failure with a non-zero exit', async () => {
    const result = await devcloudLines(['projections', 'rebuild', 'nonesuch'], db.url, 500);
    expect(result.code).to.equal(1);
    expect(result.stderr.trim().split('\n')).to.have.length(1);
    expect(result.stderr).to.match(/no projector named nonesuch/);
  });
});
