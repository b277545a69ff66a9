import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import sinon from 'sinon';
import { Refusal } from '../../src/domain/errors.js';
import { FOLDED_STREAMS_KEPT, foldStream, keepFold, keptFold } from '../../src/eventstore/folded-streams.js';
import { decideOnStream } from '../../src/eventstore/handle-command.js';
import type { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import type { TestDatabase } from '../support/database.js';
import { closeEventStore, eventStoreOver, openEventStore } from '../support/event-store.js';

/** A switch that may be used only while granted: the smallest decision a stale fold could get wrong. */
type SwitchEvent = { type: 'Granted' | 'Revoked' | 'Used'; data: Record<string, never> };
const folding = {
  initialState: () => ({ granted: false, used: 0 }),
  evolve: (s: { granted: boolean; used: number }, e: SwitchEvent) =>
    e.type === 'Used' ? { ...s, used: s.used + 1 } : { ...s, granted: e.type === 'Granted' },
};
const act = (type: SwitchEvent['type']) => () => ({
  events: [{ type, data: {} }] as SwitchEvent[],
  result: type,
});
const use = (state: { granted: boolean }) => {
  if (!state.granted) throw new Refusal(['grant_missing']);
  return act('Used')();
};

/**
 * Two processes on one database, each with its own store and so its own kept folds: what one appends the
 * other's kept fold does not know.
 */
describe('kept folds: deciding without reading, and never on a stale fold', () => {
  let db: TestDatabase;
  let here: PostgresEventStore;
  let elsewhere: PostgresEventStore;
  beforeEach(async () => {
    ({ db, store: here } = await openEventStore());
    elsewhere = eventStoreOver(db);
  });
  afterEach(async () => {
    sinon.restore();
    await elsewhere.close();
    await closeEventStore({ db, store: here });
  });

  it('a decision on a current kept fold appends without reading the stream', async () => {
    const stream = `switch-${randomUUID()}`;
    await decideOnStream(here, stream, folding, act('Granted'));
    const reads = sinon.spy(here, 'readStream');
    const outcome = await decideOnStream(here, stream, folding, use);
    expect(outcome.result).to.equal('Used');
    expect(reads.callCount, 'no read: the append at the kept revision checked it').to.equal(0);
    expect((await elsewhere.readStream(stream)).map((e) => e.type)).to.deep.equal(['Granted', 'Used']);
  });

  it('a revoke made elsewhere stops the next use here, though this process still remembers the grant', async () => {
    const stream = `switch-${randomUUID()}`;
    await decideOnStream(here, stream, folding, act('Granted'));
    await decideOnStream(elsewhere, stream, folding, act('Revoked'));
    expect(keptFold(here, stream, folding)?.state.granted, 'the fault: a stale kept fold').to.equal(true);
    let thrown: unknown;
    try {
      await decideOnStream(here, stream, folding, use);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).to.be.instanceOf(Refusal);
    expect((await here.readStream(stream)).map((e) => e.type)).to.deep.equal(['Granted', 'Revoked']);
  });

  it('a grant made elsewhere lets the next use through here, though this process remembers none', async () => {
    const stream = `switch-${randomUUID()}`;
    await decideOnStream(here, stream, folding, act('Revoked'));
    await decideOnStream(elsewhere, stream, folding, act('Granted'));
    expect(keptFold(here, stream, folding)?.state.granted, 'the fault: a stale kept fold').to.equal(false);
    const outcome = await decideOnStream(here, stream, folding, use);
    expect(outcome.result).to.equal('Used');
    expect(outcome.state).to.deep.equal({ granted: true, used: 1 });
  });

  it('a fold read once is read on from where it ended, and equals a fold from the start', async () => {
    const stream = `switch-${randomUUID()}`;
    for (let i = 0; i < 5; i++) await decideOnStream(elsewhere, stream, folding, act('Granted'));
    await foldStream(here, stream, folding);
    for (let i = 0; i < 3; i++) await decideOnStream(elsewhere, stream, folding, use);
    const reads = sinon.spy(here, 'readStream');
    const folded = await foldStream(here, stream, folding);
    expect(reads.firstCall.args[1]).to.deep.equal({ fromRevision: 5n });
    expect(folded).to.deep.equal({ state: { granted: true, used: 3 }, revision: 7n });
    const fromStart = (await here.readStream(stream)).reduce(
      (s, e) => folding.evolve(s, { type: e.type, data: {} } as SwitchEvent),
      folding.initialState(),
    );
    expect(folded.state).to.deep.equal(fromStart);
  });

  it('keeps at most FOLDED_STREAMS_KEPT streams, dropping the least recently used', async () => {
    const first = `switch-${randomUUID()}`;
    await decideOnStream(here, first, folding, act('Granted'));
    // The bound is counted in this process's memory, by the one step that keeps a fold after a read and after
    // a decision's own append alike (keepFold): the streams that fill it up to the bound are kept as a
    // decision keeps its own, without thousands of appends and reads. The one that passes the bound is
    // appended, read and folded from the store.
    const filling = Array.from({ length: FOLDED_STREAMS_KEPT - 1 }, () => `switch-${randomUUID()}`);
    const granted = {
      state: folding.evolve(folding.initialState(), { type: 'Granted', data: {} }),
      revision: 0n,
    };
    for (const name of filling) keepFold(here, name, folding, granted);
    const last = `switch-${randomUUID()}`;
    await here.append(last, [{ id: randomUUID(), type: 'Granted', data: {} }], 'no_stream');
    await foldStream(here, last, folding);
    expect(keptFold(here, first, folding), 'the oldest was dropped').to.equal(undefined);
    expect(keptFold(here, filling[0]!, folding), 'only the oldest').to.deep.equal(granted);
    expect(keptFold(here, last, folding)?.revision).to.equal(0n);
  });
});
