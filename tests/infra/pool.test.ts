import { expect } from 'chai';
import { createPool, type Pool } from '../../src/infra/postgres/pool.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';

describe('the query pool keeps a connection the server only refused a statement on', () => {
  let db: TestDatabase;
  let pool: Pool;
  before(async () => {
    db = await freshDatabase({ migrated: false });
    pool = createPool(db.url, { max: 1 });
  });
  after(async () => {
    await pool?.end();
    await db?.drop();
  });

  const backend = async () =>
    (await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  const failure = (sql: string) =>
    pool.query(sql).then(
      () => undefined,
      (error: unknown) => error as { code?: string; severity?: string },
    );

  it('an ERROR (a division by zero, a raised exception) leaves the same backend serving the next query', async () => {
    const before = await backend();
    const division = await failure('SELECT 1 / 0');
    expect(division?.code, 'the statement failed on the server').to.equal('22012');
    const raised = await failure(`DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = 'DC001'; END $$`);
    expect(raised?.code).to.equal('DC001');
    expect(await backend(), 'no new connection was made').to.equal(before);
    expect(pool.totalCount).to.equal(1);
  });

  it('a session the server ended (FATAL) is not handed out again: the next query gets a new backend', async () => {
    const before = await backend();
    const ended = await failure('SELECT pg_terminate_backend(pg_backend_pid())');
    expect(ended?.code, 'the server ended the session').to.equal('57P01');
    expect(ended?.severity).to.equal('FATAL');
    const after = await backend();
    expect(after).to.not.equal(before);
  });

  it('refuses the callback form it does not implement, instead of never calling back', () => {
    expect(() => pool.query('SELECT 1', [], () => {})).to.throw(TypeError, /callbacks/);
  });
});
