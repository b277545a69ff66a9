import type { Pool } from '../infra/postgres/pool.js';

/** Where a page starts, after keyset position `after` (0 for the first page), and how many rows it holds. */
export interface PageRequest {
  readonly after: bigint;
  readonly limit: number;
}

/**
 * One page of a list ordered by its `seq` column. `sql` takes `values`, then the position to start after
 * and the row count as its last two parameters. It asks for one row more than the page holds, so it knows
 * whether another page follows without counting; `next` is the position to continue from, if one does.
 */
export async function keysetPage<Row extends { seq: string }>(
  pool: Pool,
  sql: string,
  values: readonly unknown[],
  page: PageRequest,
): Promise<{ rows: Row[]; next: bigint | undefined }> {
  const { rows } = await pool.query<Row>(sql, [...values, String(page.after), page.limit + 1]);
  const more = rows.length > page.limit;
  const shown = more ? rows.slice(0, page.limit) : rows;
  return { rows: shown, next: more ? BigInt(shown.at(-1)!.seq) : undefined };
}
