import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { splitPositions } from '../../src/audit/chain-links.js';
import { verifyStoredHistory } from '../../src/audit/verify.js';
import { CHAINED_EVENT_TYPES } from '../../src/domain/audit/chained-events.js';
import type { AuditCheckpoint } from '../../src/domain/audit/checkpoint-events.js';
import { decodePgPosition, encodePgPosition } from '../../src/eventstore/postgres/position.js';
import { signedControlHistory } from '../support/audit-history.js';
import { eventStoreForSuite } from '../support/event-store.js';

/**
 * `audit verify` cut into segments verified at once (worker threads, each taken up from the stored links
 * at its start) reports exactly what one pass reports: on an untouched store, and with each kind of tamper,
 * most of them at the events around the cuts, where a segment hands over to the next. Each case proves
 * its tamper is in the table, and that the verification really was split, before it compares.
 */
describe('audit verify in segments at once: the same report as one pass', function () {
  this.timeout(300_000);
  const running = eventStoreForSuite();
  let projectId: string;
  let positions: string[];

  before(async () => {
    ({ projectId } = await signedControlHistory(running));
    // More history after the last checkpoint: an unsigned tail, and no event of the other project in it.
    positions = (
      await query<{ position: string }>('SELECT position FROM audit_chain_links ORDER BY position')
    ).map((r) => r.position);
    expect(positions.length, 'links').to.be.greaterThan(20);
    await query('CREATE TABLE tamper_saved (LIKE eventstore.events)');
  });

  afterEach(async () => {
    // Whatever a case did to the events, the next finds the store as it was signed.
    await query(`DELETE FROM eventstore.events e USING tamper_saved s
                  WHERE (e.transaction_id, e.global_position) = (s.transaction_id, s.global_position)`);
    await query('INSERT INTO eventstore.events OVERRIDING SYSTEM VALUE SELECT * FROM tamper_saved');
    await query('DELETE FROM tamper_saved');
  });

  const query = <R extends Record<string, unknown>>(sql: string, values: unknown[] = []) =>
    running.db.pool.query<R>(sql, values).then((r) => r.rows);
  const at = (position: string) => {
    const { transactionId, globalPosition } = decodePgPosition(position);
    return `(transaction_id, global_position) = ('${transactionId}'::xid8, ${globalPosition})`;
  };
  /** Keeps the event at `position` aside (afterEach puts it back) and returns its row's data. */
  const saved = async (position: string) => {
    const rows = await query<{ data: string }>(
      `INSERT INTO tamper_saved SELECT * FROM eventstore.events WHERE ${at(position)} RETURNING data::text AS data`,
    );
    expect(rows, `an event at ${position}`).to.have.length(1);
    return rows[0]!.data;
  };
  const remove = async (position: string) => {
    await saved(position);
    await query(`DELETE FROM eventstore.events WHERE ${at(position)}`);
    expect(await query(`SELECT 1 FROM eventstore.events WHERE ${at(position)}`)).to.have.length(0);
  };
  const change = async (position: string) => {
    const before = await saved(position);
    await query(
      `UPDATE eventstore.events SET data = (data::jsonb || '{"tampered": true}')::json WHERE ${at(position)}`,
    );
    const [after] = await query<{ data: string }>(
      `SELECT data::text AS data FROM eventstore.events WHERE ${at(position)}`,
    );
    expect(after!.data).to.not.equal(before);
  };

  /** One pass, then two and three segments at once: the reports must be the same, findings and all. */
  const sameInSegments = async (options: Parameters<typeof verifyStoredHistory>[1] = {}, splits = [2, 3]) => {
    const { store, db } = running;
    const onePass = await verifyStoredHistory({ store, pool: db.pool }, options);
    expect(onePass.threads).to.equal(1);
    const connection = {
      databaseUrl: db.url,
      eventStore: { EVENTSTORE_FOLLOWER_READS: false, PROJECTION_IDLE_POLL_MS: 2000 },
    };
    for (const threads of splits) {
      const split = await verifyStoredHistory({ store, pool: db.pool, connection }, { ...options, threads });
      expect(split.threads, 'segments verified at once').to.equal(threads);
      expect({ ...split, threads: 1 }, `${threads} segments`).to.deep.equal(onePass);
    }
    return onePass;
  };

  /** The positions each side of both cuts of a three-way split: the last of a segment, the first of the next. */
  const aroundCuts = async () => {
    const cuts = await splitPositions(running.db.pool, { upTo: positions.at(-1)! }, 3, 1);
    expect(cuts).to.have.length(2);
    return cuts.flatMap((cut) => positions.slice(positions.indexOf(cut) - 1, positions.indexOf(cut) + 1));
  };

  it('an untouched store: verified, with the same projects, heads and checkpoints', async () => {
    const report = await sameInSegments();
    expect(report.ok).to.equal(true);
    expect(report.events).to.equal(positions.length);
    expect(report.checkpoints).to.be.greaterThan(0);
  });

  it('an event removed at each side of a cut: the same finding', async () => {
    for (const position of await aroundCuts()) {
      await remove(position);
      const report = await sameInSegments({}, [3]);
      expect(report.ok, position).to.equal(false);
      expect(report.findings.map((f) => f.position)).to.include(position);
      await query(`INSERT INTO eventstore.events OVERRIDING SYSTEM VALUE SELECT * FROM tamper_saved`);
      await query('DELETE FROM tamper_saved');
    }
  });

  it('an event changed at each side of a cut: the same finding', async () => {
    for (const position of await aroundCuts()) {
      await change(position);
      const report = await sameInSegments({}, [3]);
      expect(
        report.findings.map((f) => [f.kind, f.position]),
        position,
      ).to.deep.include(['event_changed', position]);
      await query(`DELETE FROM eventstore.events e USING tamper_saved s
                    WHERE (e.transaction_id, e.global_position) = (s.transaction_id, s.global_position)`);
      await query(`INSERT INTO eventstore.events OVERRIDING SYSTEM VALUE SELECT * FROM tamper_saved`);
      await query('DELETE FROM tamper_saved');
    }
  });

  it('an event inserted in the second segment: the same finding', async () => {
    const [cut] = await splitPositions(running.db.pool, { upTo: positions.at(-1)! }, 2, 1);
    const named = await query<{
      transaction_id: string;
      n: string;
      type: string;
      data: string;
      recorded_at: Date;
    }>(
      `SELECT transaction_id::text, (SELECT max(global_position) FROM eventstore.events x
                                       WHERE x.transaction_id = e.transaction_id)::text AS n,
              event_type AS type, data::text AS data, recorded_at
         FROM eventstore.events e WHERE event_type = ANY ($2::text[]) AND data->>'projectId' = $1
        ORDER BY transaction_id`,
      [projectId, CHAINED_EVENT_TYPES],
    );
    const row = named.find((e) => encodePgPosition(e.transaction_id, e.n) > cut!);
    expect(row, 'an event naming the project after the cut').to.not.equal(undefined);
    const eventId = randomUUID();
    await query(
      `INSERT INTO eventstore.events (transaction_id, global_position, stream_name, stream_revision, event_id,
                                      event_type, data, recorded_at)
       OVERRIDING SYSTEM VALUE VALUES ($1::xid8, $2, $3, 0, $4, $7, $5::json, $6)`,
      [
        row!.transaction_id,
        String(BigInt(row!.n) + 1n),
        `device-forged-${eventId}`,
        eventId,
        row!.data,
        row!.recorded_at,
        row!.type,
      ],
    );
    await query(`INSERT INTO tamper_saved SELECT * FROM eventstore.events WHERE event_id = $1`, [eventId]);
    // afterEach removes what tamper_saved holds, then puts it back: this row must only go.
    const report = await sameInSegments();
    expect(report.findings.map((f) => f.kind)).to.include('event_inserted');
    await query('DELETE FROM eventstore.events WHERE event_id = $1', [eventId]);
    await query('DELETE FROM tamper_saved');
  });

  it("a checkpoint's head altered: the same finding", async () => {
    const [checkpoint] = await query<{ data: string; transaction_id: string; global_position: string }>(
      `SELECT data::text AS data, transaction_id::text, global_position::text FROM eventstore.events
        WHERE event_type = 'AuditCheckpointSigned' AND data->>'projectId' = $1
        ORDER BY transaction_id DESC, global_position DESC LIMIT 1`,
      [projectId],
    );
    const position = encodePgPosition(checkpoint!.transaction_id, checkpoint!.global_position);
    await saved(position);
    const data = JSON.parse(checkpoint!.data) as AuditCheckpoint;
    await query(`UPDATE eventstore.events SET data = $1::json WHERE ${at(position)}`, [
      JSON.stringify({ ...data, head: data.head.replace(/^./, (c) => (c === '0' ? '1' : '0')) }),
    ]);
    const report = await sameInSegments();
    expect(report.findings.map((f) => f.kind)).to.include('checkpoint_bad_signature');
  });

  it('the last events removed: the same checkpoint beyond history', async () => {
    for (const position of positions.slice(-3)) await remove(position);
    const report = await sameInSegments();
    expect(report.ok).to.equal(false);
  });

  it('a window (--from, --to) and one project: the same report', async () => {
    const [middle] = await query<{ recorded_at: string; last: string }>(
      `SELECT (SELECT recorded_at FROM audit_chain_links ORDER BY position OFFSET $1 LIMIT 1)::text AS recorded_at,
              (SELECT max(recorded_at) FROM audit_chain_links)::text AS last`,
      [Math.floor(positions.length / 3)],
    );
    const from = new Date(middle!.recorded_at).toISOString();
    const to = new Date(new Date(middle!.last).getTime() + 1).toISOString();
    const windowed = await sameInSegments({ from, to });
    expect(windowed.ok).to.equal(true);
    expect(windowed.events).to.be.lessThan(positions.length);
    await change(positions[positions.length - 2]!);
    const mine = await sameInSegments({ projectId, from });
    expect(mine.projects.map((p) => p.projectId)).to.deep.equal([projectId]);
  });
});
