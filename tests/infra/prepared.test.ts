import { expect } from 'chai';
import { createPool, type Pool } from '../../src/infra/postgres/pool.js';
import { arrayLiteral } from '../../src/infra/postgres/array-literal.js';
import { bind, prepared } from '../../src/infra/postgres/prepared.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';

describe('prepared statements and their array parameters', () => {
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

  const ECHO = prepared(
    'test.echo-arrays',
    'SELECT $1::text[] AS texts, $2::float8[] AS numbers, $3::int8[]::text[] AS integers, $4::jsonb[] AS documents, $5::bool[] AS flags',
  );

  it('arrive as PostgreSQL reads them, whatever the strings hold', async () => {
    const texts = [
      'plain',
      '',
      'NULL',
      'with "quotes"',
      'back\\slash',
      '{braces},commas',
      ' spaced ',
      'zwölf ✓',
      'a/b',
      'ends\\',
      null,
    ];
    // Control characters, which JSON escapes its own way, take the element-by-element path.
    const controls = ['line\nbreak', 'tab\there', '\u0001', 'back\\nslash', 'with "quotes"'];
    const numbers = [0, -1.5, 1e-7, 123456.789, Number.MAX_VALUE, null];
    const integers = [0, 1_795_000_000_000, -42, Number.MAX_SAFE_INTEGER];
    const documents = [{ a: 'say "hi"\\' }, [1, 'two'], 'text', 3.5, true, null].map((d) =>
      JSON.stringify(d),
    );
    const { rows } = await pool.query(bind(ECHO, [texts, numbers, integers, documents, [true, false, null]]));
    expect(rows[0].texts).to.deep.equal(texts);
    const controlled = await pool.query(bind(ECHO, [controls, [], [], [], []]));
    expect(controlled.rows[0].texts).to.deep.equal(controls);
    expect(rows[0].numbers).to.deep.equal(numbers);
    expect(rows[0].integers).to.deep.equal(integers.map(String));
    expect(rows[0].documents).to.deep.equal(documents.map((d) => JSON.parse(d)));
    expect(rows[0].flags).to.deep.equal([true, false, null]);
  });

  const NESTED = prepared(
    'test.echo-nested-arrays',
    'SELECT n.member::text[] AS member FROM unnest($1::text[]) WITH ORDINALITY AS n(member, i) ORDER BY n.i',
  );

  it('carry arrays inside arrays as the text of each inner one (as the device list sends capabilities)', async () => {
    const inners = [
      ['binary.switch', 'system.rssi'],
      [],
      ['{"a","b"}', 'a,b', 'NULL', '', 'q"\\', 'back\\slash'],
      ['line\nbreak', 'zwölf ✓'],
    ];
    const { rows } = await pool.query<{ member: string[] }>(
      bind(NESTED, [inners.map((inner) => arrayLiteral(inner)!)]),
    );
    expect(rows.map((r) => r.member)).to.deep.equal(inners);
  });

  it('are sent as text, except arrays of anything else, which pg serialises itself', () => {
    const [texts, dates, notFinite] = bind(ECHO, [['a"b', 1, null], [new Date(0)], [Number.NaN]]).values!;
    expect(texts).to.equal('{"a\\"b",1,null}');
    expect(dates).to.deep.equal([new Date(0)]);
    expect(notFinite, 'JSON would write NaN as null').to.deep.equal([Number.NaN]);
  });
});
