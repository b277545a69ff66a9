import { randomBytes, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import pg from 'pg';
import { isBusyError, isConnectionError, isDataError } from '../../src/infra/postgres/errors.js';
import { eventStoreForSuite } from '../support/event-store.js';

describe('PostgreSQL error classes', () => {
  const suite = eventStoreForSuite();

  // Event data is stored as json since migration 0404, which checks only the syntax: the store's own
  // eventstore.storable() keeps these refusals on every append path (one stream, several, a batch).
  const appendPaths = {
    append: (data: object) =>
      suite.store.append(`probe-${randomUUID()}`, [{ id: randomUUID(), type: 'Probe', data }], 'any'),
    appendMany: (data: object) =>
      suite.store.appendMany([
        {
          streamName: `probe-${randomUUID()}`,
          events: [{ id: randomUUID(), type: 'Probe', data: {} }],
          expectedRevision: 'any',
        },
        {
          streamName: `probe-${randomUUID()}`,
          events: [{ id: randomUUID(), type: 'Probe', data }],
          expectedRevision: 'any',
        },
      ]),
    appendBatch: (data: object) =>
      suite.store.appendBatch([
        { streamName: `probe-${randomUUID()}`, event: { id: randomUUID(), type: 'Probe', data } },
      ]),
  };

  for (const [label, text] of [
    ['a NUL', 'TS0601\u0000'],
    ['a lone surrogate', 'bulb \ud800'],
  ] as const) {
    for (const [path, appendWith] of Object.entries(appendPaths)) {
      it(`the real server refuses ${label} in event data as a data error (class 22), not a connection error (${path})`, async () => {
        const error = await appendWith({ text }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error, 'the append failed').to.be.instanceOf(Error);
        expect(isDataError(error), String(error)).to.equal(true);
        expect(isConnectionError(error)).to.equal(false);
      });
    }
  }

  it('stores text that only looks like an escape, a control character and an emoji, unchanged', async () => {
    const data = { path: 'C:\\users\\u0000', bell: 'ring\u0007', emoji: 'plug \ud83d\udd0c' };
    const streamName = `probe-${randomUUID()}`;
    await suite.store.appendBatch([{ streamName, event: { id: randomUUID(), type: 'Probe', data } }]);
    const [stored] = await suite.store.readStream(streamName);
    expect(stored!.data).to.deep.equal(data);
  });

  it("the real server's 'too many connections' (53300) is a busy error, not a fault", async () => {
    // A role allowed no connections at all: the server itself refuses, as when max_connections is reached.
    const role = `dc_busy_${randomBytes(4).toString('hex')}`;
    const password = randomBytes(18).toString('base64url');
    await suite.db.pool.query(`CREATE ROLE ${role} LOGIN CONNECTION LIMIT 0 PASSWORD '${password}'`);
    try {
      const url = new URL(suite.db.url);
      url.username = role;
      url.password = password;
      const client = new pg.Client({ connectionString: url.toString() });
      const error = await client.connect().then(
        () => client.end(),
        (e: unknown) => e,
      );
      expect(error, 'the server refused the connection').to.be.instanceOf(Error);
      expect((error as { code?: string }).code).to.equal('53300');
      expect(isBusyError(error)).to.equal(true);
      expect(isConnectionError(error)).to.equal(false);
    } finally {
      await suite.db.pool.query(`DROP ROLE ${role}`);
    }
  });

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
