import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { BatchEntry } from '../../src/eventstore/port.js';
import { eventStoreForSuite } from '../support/event-store.js';

/**
 * read_types_merged_page plans each type on its own and merges them; read_types_page plans them together.
 * Both must return the same page: the same events in the same global order, and the same head row, whatever
 * the position, the types asked for (dense, sparse, absent, repeated, none) and whether the table was analysed.
 */
describe('event store: a page of types read type by type and merged', function () {
  this.timeout(120_000);
  const running = eventStoreForSuite();
  let positions: { tx: string; gp: string }[];

  before(async () => {
    const entry = (i: number): BatchEntry => ({
      streamName: `thing-${i % 37}`,
      event: {
        id: randomUUID(),
        type: i % 97 === 0 ? 'Rare' : i % 3 === 0 ? 'Third' : 'Common',
        data: { i },
      },
    });
    for (let batch = 0; batch < 30; batch++) {
      await running.store.appendBatch(Array.from({ length: 200 }, (_, k) => entry(batch * 200 + k)));
    }
    positions = (
      await running.db.pool.query<{ tx: string; gp: string }>(
        'SELECT transaction_id::text AS tx, global_position::text AS gp FROM eventstore.events ORDER BY 1, 2',
      )
    ).rows;
    expect(positions).to.have.length(6000);
  });

  const page = async (fn: string, after: { tx: string; gp: string }, max: number, types: string[]) =>
    (
      await running.db.pool.query(
        `SELECT is_head, event_id, event_type, data::text AS data, metadata::text AS metadata, stream_name,
                stream_revision::text, transaction_id::text, global_position::text, recorded_at
           FROM eventstore.${fn}($1::text::xid8, $2::bigint, $3::int, $4::text[])`,
        [after.tx, after.gp, max, types],
      )
    ).rows;

  const typeLists = [['Common', 'Third', 'Rare'], ['Rare'], ['Third', 'Nothing'], ['Nothing'], []];
  const starts = () => [{ tx: '0', gp: '0' }, positions[2999]!, positions[5990]!, positions.at(-1)!];

  for (const analysed of [false, true]) {
    it(`returns read_types_page's page for every start, size and list of types (${analysed ? 'analysed' : 'as appended'})`, async () => {
      if (analysed) await running.db.pool.query('VACUUM ANALYZE eventstore.events');
      let events = 0;
      for (const after of starts()) {
        for (const types of typeLists) {
          for (const max of [1, 50, 1000]) {
            const merged = await page('read_types_merged_page', after, max, types);
            expect(merged, JSON.stringify({ after, types, max })).to.deep.equal(
              await page('read_types_page', after, max, types),
            );
            expect(merged.at(-1)!.is_head, 'ends with the head row').to.equal(true);
            events += merged.length - 1;
          }
        }
      }
      // Not vacuous: the pages held events, full ones and short ones.
      expect(events).to.be.greaterThan(4000);
      // A type named twice is read once (read_types_page would hand its events back twice).
      const once = await page('read_types_merged_page', starts()[0]!, 1000, ['Rare', 'Common']);
      expect(
        await page('read_types_merged_page', starts()[0]!, 1000, ['Rare', 'Common', 'Rare']),
      ).to.deep.equal(once);
    });
  }
});
