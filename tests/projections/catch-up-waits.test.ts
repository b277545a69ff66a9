import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import { catchUpProjector, isCaughtUp, waitUntilProjectedThrough } from '../../src/projections/catch-up.js';
import { installProjector } from '../../src/projections/checkpoints.js';
import { tallyProjector } from '../fixtures/tally-projector.js';
import type { TestDatabase } from '../support/database.js';
import { closeEventStore, openEventStore } from '../support/event-store.js';

describe('waiting for a projector to have applied a position', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  const tally = tallyProjector(['Ticked']);
  beforeEach(async () => {
    ({ db, store } = await openEventStore());
    await installProjector(db.pool, tally);
  });
  afterEach(() => closeEventStore({ db, store }));

  const tick = async () =>
    (await store.append(`clock-${randomUUID()}`, [{ id: randomUUID(), type: 'Ticked', data: {} }], 'any'))
      .position;

  it('holds once every event up to the position is applied, whatever is pending after it', async () => {
    const first = await tick();
    expect(await waitUntilProjectedThrough(db.pool, store, tally, first, 100), 'not applied yet').to.equal(
      false,
    );

    await catchUpProjector(db.pool, store, tally);
    const second = await tick();
    // Not caught up (the second event waits), yet everything up to the first is applied.
    expect(await isCaughtUp(db.pool, store, tally)).to.equal(false);
    expect(await waitUntilProjectedThrough(db.pool, store, tally, first, 100)).to.equal(true);
    expect(await waitUntilProjectedThrough(db.pool, store, tally, second, 100)).to.equal(false);

    // An event of another type after the position does not count either.
    await catchUpProjector(db.pool, store, tally);
    const other = await store.append(
      `other-${randomUUID()}`,
      [{ id: randomUUID(), type: 'Tocked', data: {} }],
      'any',
    );
    expect(await waitUntilProjectedThrough(db.pool, store, tally, other.position, 100)).to.equal(true);
  });
});
