import { expect } from 'chai';
import { createPool, type Pool } from '../../src/infra/postgres/pool.js';
import { arrayLiteral } from '../../src/infra/postgres/array-literal.js';
import * as binaryArray from '../../src/infra/postgres/binary-array.js';
import { bind, prepared } from '../../src/infra/postgres/prepared.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';

// Strings that array text must quote or escape, or that look like something else to PostgreSQL.
const AWKWARD_TEXTS = [
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
];

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
    const texts = [...AWKWARD_TEXTS, null];
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

  // Each array comes back as text, so what PostgreSQL read is compared with what it reads from text.
  const BINARY_ECHO = prepared(
    'test.echo-binary-arrays',
    `SELECT $1::text[]::text AS texts, $2::int8[]::text AS int8s, $3::int4[]::text AS int4s,
            $4::float8[]::text AS float8s, $5::uuid[]::text AS uuids, $6::jsonb[]::text AS documents,
            $7::timestamptz[] = $8::text[]::timestamptz[] AS same_times,
            array_length($7::timestamptz[], 1) AS time_count,
            $9::text[]::text AS texts_from_text, $10::float8[]::text AS float8s_from_text`,
  );

  it('in binary arrive as PostgreSQL reads the same values from their text form', async () => {
    const long = 'a'.repeat(70);
    const texts = [...AWKWARD_TEXTS, 'line\nbreak', long, `${long}zwölf ✓`, 'pair 😀', null];
    const int8s = [
      0,
      1_795_000_000_000,
      -42,
      Number.MAX_SAFE_INTEGER,
      -Number.MAX_SAFE_INTEGER,
      -(2 ** 32),
      2 ** 32 - 1,
      null,
    ];
    const int4s = [0, -1, 2 ** 31 - 1, -(2 ** 31), null];
    const float8s = [0, -0, -1.5, 1e-7, 123456.789, Number.MAX_VALUE, -Number.MIN_VALUE, 0.1 + 0.2, null];
    const uuids = ['00000000-0000-0000-0000-000000000000', 'F3A1C2D4-5B6E-4F70-8a9b-0c1d2e3f4a5b', null];
    const documents = [
      { a: 'say "hi"\\' },
      [1, 'two', true],
      'text',
      3.5,
      null,
      ['zwölf ✓'],
      { long: 'b'.repeat(80) },
    ].map((d) => JSON.stringify(d));
    const times = [
      '2026-11-28T12:34:56.789Z',
      '2026-11-28T12:34:56Z',
      '2026-03-29T01:59:59.999999Z',
      '2026-01-01T00:00:00.1234567Z',
      '2026-01-01T00:00:00.0000005Z',
      '2026-01-01T00:00:00.0000015Z',
      '1960-01-01T00:00:00.1239Z',
      '1999-12-31T23:59:59.5Z',
      '2024-02-29T23:59:59.999Z',
      '2026-01-01T24:00:00.000Z',
      '0001-01-01T00:00:00.000Z',
      '9999-12-31T23:59:59.9999995Z',
      '1500-06-15T12:00:00.0000025Z',
      '2026-01-01T00:00:00.9999996Z',
      '1969-12-31T23:59:59.9999994Z',
      '2026-01-01T00:00:00.123456789+02:00',
      '2026-01-01T00:00:00.0123456789Z',
      null,
    ];
    const { rows } = await pool.query(
      bind(BINARY_ECHO, [
        binaryArray.textArray(texts),
        binaryArray.int8Array(int8s),
        binaryArray.int4Array(int4s),
        binaryArray.float8Array(float8s),
        binaryArray.uuidArray(uuids),
        binaryArray.jsonbArray([...documents, null]),
        binaryArray.timestamptzArray([...times, 1_795_000_000_123]),
        [...times, new Date(1_795_000_000_123).toISOString()],
        texts,
        float8s,
      ]),
    );
    const row = rows[0];
    expect(row.texts).to.equal(row.texts_from_text);
    expect(row.int8s).to.equal(`{${int8s.map((n) => n ?? 'NULL').join(',')}}`);
    expect(row.int4s).to.equal(`{${int4s.map((n) => n ?? 'NULL').join(',')}}`);
    expect(row.float8s).to.equal(row.float8s_from_text);
    expect(row.uuids).to.equal(`{${uuids.map((u) => u?.toLowerCase() ?? 'NULL').join(',')}}`);
    const stored = await pool.query(`SELECT $1::jsonb[]::text AS documents`, [
      `{${documents.map((d) => `"${d.replace(/["\\]/g, '\\$&')}"`).join(',')},NULL}`,
    ]);
    expect(row.documents).to.equal(stored.rows[0].documents);
    expect(row.time_count).to.equal(times.length + 1);
    expect(row.same_times, 'every time to the microsecond, nulls where null').to.equal(true);
  });

  it("in binary take year 0, which PostgreSQL's text input refuses, as ISO 8601's 1 BC", async () => {
    const { rows } = await pool.query<{ day: string }>(
      `SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US BC') AS day FROM unnest($1::timestamptz[]) t`,
      [binaryArray.timestamptzArray(['0000-02-29T12:00:00.000Z', '0000-03-01T00:00:00.0000015Z'])],
    );
    expect(rows.map((r) => r.day)).to.deep.equal([
      '0001-02-29 12:00:00.000000 BC',
      '0001-03-01 00:00:00.000002 BC',
    ]);
  });

  it('in binary refuse what the element type cannot hold exactly, before anything is sent', () => {
    expect(() => binaryArray.int8Array([1.5])).to.throw(RangeError);
    expect(() => binaryArray.int8Array([2 ** 53])).to.throw(RangeError);
    expect(() => binaryArray.timestamptzArray([Number.NaN])).to.throw(RangeError);
    expect(() => binaryArray.timestamptzArray([1e17]), 'beyond 294276 AD').to.throw(RangeError);
    expect(() => binaryArray.timestamptzArray([-3e14]), 'before 4714 BC').to.throw(RangeError);
    expect(() => binaryArray.timestamptzArray([6e15]), 'about 190,000 AD').not.to.throw();
    expect(() => binaryArray.int4Array([2 ** 31])).to.throw(RangeError);
    expect(() => binaryArray.int4Array([-(2 ** 31) - 1])).to.throw(RangeError);
    expect(() => binaryArray.int4Array([1.5])).to.throw(RangeError);
    expect(() => binaryArray.int4Array([Number.NaN])).to.throw(RangeError);
    expect(() => binaryArray.uuidArray(['not-a-uuid'])).to.throw(RangeError);
    expect(() => binaryArray.timestamptzArray(['yesterday'])).to.throw(RangeError);
    expect(
      () => binaryArray.timestamptzArray(['2026-02-30T00:00:00.000Z']),
      'a day its month lacks',
    ).to.throw(RangeError);
    expect(() => binaryArray.timestamptzArray(['2025-02-29T12:00:00.5Z'])).to.throw(RangeError);
    expect(() => binaryArray.timestamptzArray(['2024-02-29T12:00:00.000Z']), 'a leap day').not.to.throw();
  });
});
