import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import { isConnectionError, isDataError } from '../../src/infra/postgres/errors.js';
import type { TestDatabase } from '../support/database.js';
import { closeEventStore, openEventStore } from '../support/event-store.js';

describe('PostgreSQL error classes', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  before(async () => {
    ({ db, store } = await openEventStore());
  });
  after(async () => {
    await closeEventStore({ db, store });
  });

  for (const [label, text] of [
    ['a NUL', 'TS0601\u0000'],
    ['a lone surrogate', 'bulb \ud800'],
  ] as const) {
    it(`the real server refuses ${label} in event data as a data error (class 22), not a connection error`, async () => {
      const error = await store
        .append(`probe-${randomUUID()}`, [{ id: randomUUID(), type: 'Probe', data: { text } }], 'any')
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(error, 'the append failed').to.be.instanceOf(Error);
      expect(isDataError(error), String(error)).to.equal(true);
      expect(isConnectionError(error)).to.equal(false);
    });
  }

  it('classifies connection failures', () => {
    for (const code of ['08006', '08001', '57P01', '57P03', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT']) {
      expect(isConnectionError(Object.assign(new Error(code), { code })), code).to.equal(true);
    }
    expect(isConnectionError(new Error('timeout exceeded when trying to connect'))).to.equal(true);
    expect(isConnectionError(new Error('Connection terminated unexpectedly'))).to.equal(true);
    expect(isConnectionError(Object.assign(new Error('x'), { code: '23505' }))).to.equal(false);
    expect(isDataError(Object.assign(new Error('x'), { code: '23505' }))).to.equal(false);
  });
});
