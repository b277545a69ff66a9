import { expect } from 'chai';
import { createPool, type Pool } from '../../src/infra/postgres/pool.js';
import { bind, prepared } from '../../src/infra/postgres/prepared.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';

describe('prepared statements', () => {
  let db: TestDatabase;
  let pool: Pool;
  before(async () => {
    db = await freshDatabase({ migrated: false });
    pool = createPool(db.url, { max: 1 });
    await pool.query('CREATE TABLE sample (n int)');
    await pool.query('INSERT INTO sample VALUES (1), (2), (3)');
  });
  after(async () => {
    await pool?.end();
    await db?.drop();
  });

  const COUNT_AT_LEAST = prepared(
    'test.count-at-least',
    'SELECT count(*)::int AS n FROM sample WHERE n >= $1',
  );
  const count = async (from: number) =>
    (await pool.query<{ n: number }>(bind(COUNT_AT_LEAST, [from]))).rows[0]!.n;

  it('are prepared once per connection and, once run often, planned once', async () => {
    for (let i = 0; i < 8; i++) expect(await count(2)).to.equal(2);
    const { rows } = await pool.query<{ generic_plans: string; custom_plans: string }>(
      'SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = $1',
      [COUNT_AT_LEAST.name],
    );
    expect(rows, 'the connection holds the statement under its name').to.have.length(1);
    expect(Number(rows[0]!.generic_plans), 'later runs reuse one plan').to.be.greaterThan(0);
    expect(Number(rows[0]!.custom_plans)).to.be.lessThan(8);
  });

  it('follow a table swapped under their name (as a rebuild swaps read models)', async () => {
    expect(await count(1)).to.equal(3);
    await pool.query('ALTER TABLE sample RENAME TO sample_old');
    await pool.query('CREATE TABLE sample (n int)');
    await pool.query('INSERT INTO sample VALUES (5)');
    expect(await count(1), 'the new table is read, not the renamed one').to.equal(1);
  });

  it('refuse a name defined again with another text', () => {
    expect(prepared(COUNT_AT_LEAST.name, COUNT_AT_LEAST.text)).to.deep.equal(COUNT_AT_LEAST);
    expect(() => prepared(COUNT_AT_LEAST.name, 'SELECT 1')).to.throw(/another text/);
  });
});
