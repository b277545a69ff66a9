import { expect } from 'chai';
import sinon from 'sinon';
import { NO_STREAM } from '@kurrent/kurrentdb-client';
import { signCheckpoints } from '../../src/audit/checkpoints.js';
import { activeAuditSigner } from '../../src/audit/signing-keys.js';
import { allEvents } from '../../src/domain/events/all.js';
import { decodePosition } from '../../src/eventstore/kurrentdb/position.js';
import { auditChainProjector } from '../../src/projections/audit-chain/projector.js';
import { catchUpProjector } from '../../src/projections/catch-up.js';
import {
  appendProjectHistories,
  appendProjectHistory,
  clientRevoked,
  expectContinuousCheckpoints,
  expectedChain,
  projectChainUntil,
  raceOnAuditStreams,
  signTwiceAtOnce,
  storedLinks,
} from '../support/audit-chain.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { eventStoreForEachTest } from '../support/event-store.js';
import { FakeKurrentDb } from '../support/fake-kurrentdb.js';

const ALL_TYPES = allEvents.map((d) => d.type);
const T0 = new Date('2026-03-01T10:00:00.000Z');

/**
 * The audit chain and its checkpoints over the KurrentDB adapter, with the client replaced by an in-memory
 * one (tests/support/fake-kurrentdb.ts) where no server runs. The same cases against a real server are in
 * the event-store contract (tests/eventstore/contract.ts), pending without one.
 */
describe('KurrentDB adapter (client stubbed): the audit chain and its checkpoints', () => {
  const suite = eventStoreForEachTest({ idlePollMs: 50 });
  const extra: TestDatabase[] = [];
  const readModels = async () => {
    const db = await freshDatabase();
    extra.push(db);
    return db;
  };
  afterEach(async () => {
    await Promise.all(extra.splice(0).map((db) => db.drop()));
  });

  it('gives the same chain as PostgreSQL for the same events, through readAll and through the subscription', async () => {
    const head = await appendProjectHistories(suite.store, ['prj_aaaaaaaa', 'prj_bbbbbbbb']);
    await catchUpProjector(suite.db.pool, suite.store, auditChainProjector());
    const onPostgres = await storedLinks(suite.db.pool);
    expect(onPostgres).to.have.length(16);

    // KurrentDB keeps the bytes the client sent, JSON.stringify of the data, and hands back their parse:
    // the chain there commits to JSON.stringify of what it read. For what the service writes that is the
    // text PostgreSQL keeps, byte for byte.
    const recorded = (
      await suite.store.readAll({ maxCount: 1000, eventTypes: ALL_TYPES, dataAsStored: true })
    ).events;
    expect(recorded.map((e) => e.position).at(-1)).to.equal(head);
    const fake = new FakeKurrentDb();
    for (const e of recorded) {
      const data = JSON.parse(e.dataText!) as unknown;
      expect(JSON.stringify(data), `${e.type} at ${e.position}`).to.equal(e.dataText);
      fake.load({
        streamId: e.streamName,
        id: e.id,
        type: e.type,
        revision: e.revision,
        created: e.recordedAt,
        data,
        metadata: e.metadata,
        // The same place in the global order: Postgres positions have KurrentDB's shape.
        position: decodePosition(e.position),
      });
    }

    const viaReadAll = await readModels();
    await catchUpProjector(viaReadAll.pool, fake.store(), auditChainProjector(), 3);
    expect(await storedLinks(viaReadAll.pool)).to.deep.equal(onPostgres);

    const viaSubscription = await readModels();
    await projectChainUntil(viaSubscription, fake.store(), head);
    expect(await storedLinks(viaSubscription.pool)).to.deep.equal(onPostgres);

    // Live: an event appended after the subscription caught up is chained on from the head.
    const appended = await fake.store().append('client-prj_aaaaaaaa', [clientRevoked('prj_aaaaaaaa')], 'any');
    await projectChainUntil(viaSubscription, fake.store(), appended.position);
    const links = await storedLinks(viaSubscription.pool);
    expect(links).to.deep.equal(await expectedChain(fake.store()));
    expect(links.at(-1)).to.include({ position: appended.position, projectId: 'prj_aaaaaaaa', sequence: 9 });
  });

  it('appends checkpoints at the expected revision; a signer that lost the race gets WrongExpectedRevisionError', async () => {
    const fake = new FakeKurrentDb();
    const store = fake.store();
    await appendProjectHistory(store, 'prj_aaaaaaaa');
    await appendProjectHistory(store, 'prj_bbbbbbbb');
    await catchUpProjector(suite.db.pool, store, auditChainProjector());
    const signer = await activeAuditSigner(suite.db.pool);
    const appends = sinon.spy(fake, 'appendToStream');

    const { outcomes, reset } = raceOnAuditStreams(store);
    expect(await signTwiceAtOnce(store, suite.db.pool, signer, T0)).to.deep.equal([
      'prj_aaaaaaaa#0',
      'prj_bbbbbbbb#0',
    ]);
    expect(outcomes.sort()).to.deep.equal(['appended', 'appended', 'wrong revision', 'wrong revision']);
    expect(appends.getCalls().map((c) => c.args[2].streamState)).to.deep.equal(Array(4).fill(NO_STREAM));

    await store.append('client-prj_aaaaaaaa', [clientRevoked('prj_aaaaaaaa')], 'any');
    await catchUpProjector(suite.db.pool, store, auditChainProjector());
    reset();
    appends.resetHistory();
    expect(await signTwiceAtOnce(store, suite.db.pool, signer, T0)).to.deep.equal(['prj_aaaaaaaa#1']);
    expect(outcomes.sort()).to.deep.equal(['appended', 'wrong revision']);
    expect(appends.getCalls().map((c) => [c.args[0], c.args[2].streamState])).to.deep.equal([
      ['audit-prj_aaaaaaaa', 0n],
      ['audit-prj_aaaaaaaa', 0n],
    ]);
    sinon.restore();

    expect(
      await signCheckpoints({ store, pool: suite.db.pool, signer, now: T0 }),
      'nothing moved',
    ).to.deep.equal([]);
    await expectContinuousCheckpoints(store, suite.db.pool, 'prj_aaaaaaaa', [8, 9]);
    await expectContinuousCheckpoints(store, suite.db.pool, 'prj_bbbbbbbb', [8]);
  });
});
