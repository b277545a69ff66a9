import type pg from 'pg';
import type { ChainSeed, StoredLink } from '../domain/audit/verification.js';
import { inTransaction, type Pool } from '../infra/postgres/pool.js';
import { AUDIT_CHAIN_PROJECTOR } from '../projections/audit-chain/projector.js';
import { readCheckpoint } from '../projections/checkpoints.js';

/**
 * The stored audit chain (projections/audit-chain) as verification and export read it. Positions are
 * compared in SQL as the column sorts them (COLLATE "C", byte by byte), which is the store's global order.
 * `$3` (a project, or NULL for all) narrows every statement to one chain.
 */
const PROJECT = `($3::text IS NULL OR project_id = $3)`;

// sequence as float8: pg hands a float8 back as a number, a bigint as a string to convert.
const LINK_COLUMNS = `position, project_id, sequence::float8 AS sequence, digest, link`;

const linksPage = (lower: '>' | '>=') => `
  SELECT ${LINK_COLUMNS} FROM audit_chain_links
   WHERE position ${lower} $1 AND position <= $2 AND position < $5 AND ${PROJECT}
   ORDER BY position LIMIT $4`;
const LINKS_FROM = linksPage('>=');
const LINKS_AFTER = linksPage('>');

/**
 * A window by recorded time, in the global order: from the first link recorded at or after `from` to the
 * last recorded before `to` (both up to $2). Recording times follow the global order only nearly (a
 * transaction that began first may record later): the window is these positions and all between them.
 */
const FIRST_RECORDED_FROM = `
  SELECT position FROM audit_chain_links WHERE recorded_at >= $1 AND position <= $2 AND ${PROJECT}
   ORDER BY position LIMIT 1`;
const LAST_RECORDED_BEFORE = `
  SELECT position FROM audit_chain_links WHERE recorded_at < $1 AND position <= $2 AND ${PROJECT}
   ORDER BY position DESC LIMIT 1`;

/** Each chain's last link before position $1 (and up to $2): where verification of a window takes it up. */
const LAST_BEFORE = `
  SELECT DISTINCT ON (project_id) ${LINK_COLUMNS} FROM audit_chain_links
   WHERE position < $1 AND position <= $2 AND ${PROJECT}
   ORDER BY project_id, sequence DESC`;

const PROJECT_LINKS = `
  SELECT ${LINK_COLUMNS} FROM audit_chain_links
   WHERE project_id = $3 AND sequence > $1 AND sequence <= $2
   ORDER BY sequence LIMIT $4`;

const LAST_SEQUENCE_UP_TO = `
  SELECT sequence::float8 AS sequence FROM audit_chain_links WHERE project_id = $1 AND position <= $2
   ORDER BY sequence DESC LIMIT 1`;

/** How many links lie in a range, and the position of the $4-th of them (from 0): where to split it. */
const LINKS_IN_RANGE = `
  SELECT count(*)::float8 AS n FROM audit_chain_links WHERE position >= $1 AND position <= $2 AND ${PROJECT}`;
const NTH_LINK_IN_RANGE = `
  SELECT position FROM audit_chain_links WHERE position >= $1 AND position <= $2 AND ${PROJECT}
   ORDER BY position OFFSET $4 LIMIT 1`;

/** The positions of these links of these chains ($1 projects, $2 sequences, pairwise). */
const AT_SEQUENCES = `
  SELECT l.project_id, l.position FROM unnest($1::text[], $2::bigint[]) AS w(project_id, sequence)
    JOIN audit_chain_links l USING (project_id, sequence)`;

const AT_POSITIONS = `SELECT ${LINK_COLUMNS} FROM audit_chain_links WHERE position = ANY ($1::text[])`;

/**
 * A page of links read in index order. The planner would otherwise choose by its row estimates, which are
 * wrong right after the chain's projector filled the table (before autovacuum's ANALYZE): it takes the
 * range for a few thousand rows, scans a bitmap and sorts everything after the key, so each page sorts the
 * rest of the table (measured on 1,000,000 links: 650 ms a page 700,000 links in, 6 ms in index order).
 */
async function pageInIndexOrder<Row extends object = LinkRow>(
  pool: Pool,
  sql: string,
  parameters: unknown[],
): Promise<Row[]> {
  return inTransaction(pool, async (client) => {
    await client.query('SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off');
    return (await client.query<Row & pg.QueryResultRow>(sql, parameters)).rows;
  });
}

interface LinkRow {
  position: string;
  project_id: string;
  sequence: number;
  digest: string;
  link: string;
}

const toLink = (row: LinkRow): StoredLink => ({
  position: row.position,
  projectId: row.project_id,
  sequence: row.sequence,
  digest: row.digest,
  link: row.link,
});

// Sorts after every position (32 hex digits on Postgres): "no upper bound".
const UNBOUNDED = '\u{10FFFF}';

/**
 * The end of the stored chain: the position the chain's projector has reached. Events after it are not
 * chained yet; an event before it without a link was never seen by the projector: it was inserted.
 */
export async function chainFrontier(pool: Pool): Promise<string | undefined> {
  return (await readCheckpoint(pool, AUDIT_CHAIN_PROJECTOR))?.position;
}

/**
 * A range of the stored chain: links at `from` (inclusive) or after, up to `upTo` (inclusive) and before
 * `before` (exclusive), of one project or all.
 */
export interface LinkRange {
  readonly from?: string;
  readonly upTo: string;
  readonly before?: string;
  readonly projectId?: string;
}

/** Reads a range of links in global order, a page of `pageSize` at each call; undefined once done. */
export function linkPages(
  pool: Pool,
  range: LinkRange,
  pageSize: number,
): () => Promise<StoredLink[] | undefined> {
  let after: string | undefined;
  let done = false;
  return async () => {
    if (done) return undefined;
    const rows = await pageInIndexOrder(pool, after === undefined ? LINKS_FROM : LINKS_AFTER, [
      after ?? range.from ?? '',
      range.upTo,
      range.projectId ?? null,
      pageSize,
      range.before ?? UNBOUNDED,
    ]);
    done = rows.length < pageSize;
    after = rows.at(-1)?.position;
    return rows.length > 0 ? rows.map(toLink) : undefined;
  };
}

/**
 * Positions that cut a range of links into `parts` of nearly equal length, each the first link of the part
 * after it; fewer where the range holds fewer than `minimum` links a part.
 */
export async function splitPositions(
  pool: Pool,
  range: LinkRange,
  parts: number,
  minimum: number,
): Promise<string[]> {
  const parameters = (offset?: number) => [range.from ?? '', range.upTo, range.projectId ?? null, offset];
  const count = (await pool.query<{ n: number }>(LINKS_IN_RANGE, parameters().slice(0, 3))).rows[0]!.n;
  const segments = Math.max(1, Math.min(parts, Math.floor(count / Math.max(1, minimum))));
  const cuts: string[] = [];
  for (let part = 1; part < segments; part++) {
    const [row] = await pageInIndexOrder<{ position: string }>(
      pool,
      NTH_LINK_IN_RANGE,
      parameters(Math.floor((count * part) / segments)),
    );
    if (row !== undefined && row.position !== cuts.at(-1)) cuts.push(row.position);
  }
  return cuts;
}

/** The position of each project's link number `sequence`. */
export async function linkPositions(
  pool: Pool,
  wanted: readonly { readonly projectId: string; readonly sequence: number }[],
): Promise<Map<string, string>> {
  const { rows } = await pool.query<{ project_id: string; position: string }>(AT_SEQUENCES, [
    wanted.map((w) => w.projectId),
    wanted.map((w) => w.sequence),
  ]);
  return new Map(rows.map((r) => [r.project_id, r.position]));
}

/** Where a window by recorded time starts: at a link's position, after the chain's end, or at its beginning. */
type WindowStart = { readonly at: string } | 'after_chain' | 'beginning';

/**
 * The positions a [from, to) window of recorded times covers (FIRST_RECORDED_FROM), up to `upTo`: where it
 * starts, and its last chained position ('' when no link was recorded before `to`).
 */
export async function recordedWindow(
  pool: Pool,
  window: { from?: string; to?: string },
  range: { upTo: string; projectId?: string },
): Promise<{ start: WindowStart; last: string }> {
  const bound = async (sql: string, instant: string) =>
    (await pool.query<{ position: string }>(sql, [instant, range.upTo, range.projectId ?? null])).rows[0]
      ?.position;
  const first = window.from === undefined ? undefined : await bound(FIRST_RECORDED_FROM, window.from);
  const last = window.to === undefined ? range.upTo : ((await bound(LAST_RECORDED_BEFORE, window.to)) ?? '');
  return {
    start: window.from === undefined ? 'beginning' : first === undefined ? 'after_chain' : { at: first },
    last,
  };
}

/** Each project's chain as it stood before `before` (its last link there; its head without), up to `upTo`. */
export async function chainSeedsBefore(
  pool: Pool,
  before: string | undefined,
  range: { upTo: string; projectId?: string },
): Promise<Map<string, ChainSeed>> {
  const { rows } = await pool.query<LinkRow>(LAST_BEFORE, [
    before ?? UNBOUNDED,
    range.upTo,
    range.projectId ?? null,
  ]);
  return new Map(rows.map((r) => [r.project_id, { count: r.sequence, link: r.link, position: r.position }]));
}

/** One project's links with sequence in (after, upTo], in sequence order, a page at each call. */
export function projectLinkPages(
  pool: Pool,
  projectId: string,
  range: { after: number; upTo: number },
  pageSize: number,
): () => Promise<StoredLink[] | undefined> {
  let after = range.after;
  return async () => {
    if (after >= range.upTo) return undefined;
    const rows = await pageInIndexOrder(pool, PROJECT_LINKS, [after, range.upTo, projectId, pageSize]);
    if (rows.length === 0) return undefined;
    after = rows.at(-1)!.sequence;
    return rows.map(toLink);
  };
}

/** The links at these positions (those the chain holds), by position. */
export async function linksAt(pool: Pool, positions: readonly string[]): Promise<Map<string, StoredLink>> {
  const { rows } = await pool.query<LinkRow>(AT_POSITIONS, [[...new Set(positions)]]);
  return new Map(rows.map((r) => [r.position, toLink(r)]));
}

/** How many links a project's chain holds up to `upTo` (inclusive). */
export async function chainLengthUpTo(pool: Pool, projectId: string, upTo: string): Promise<number> {
  const { rows } = await pool.query<{ sequence: number }>(LAST_SEQUENCE_UP_TO, [projectId, upTo]);
  return rows[0]?.sequence ?? 0;
}

/** The project of each registered device, as the chain's projector learnt them (ChainMembership). */
export async function deviceProjects(pool: Pool): Promise<Map<string, string>> {
  const { rows } = await pool.query<{ device_id: string; project_id: string }>(
    'SELECT device_id, project_id FROM audit_chain_devices',
  );
  return new Map(rows.map((r) => [r.device_id, r.project_id]));
}
