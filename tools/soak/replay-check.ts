import type { EventStore } from '../../src/eventstore/port.js';
import { inTransaction, type Pool } from '../../src/infra/postgres/pool.js';
import type { Projector } from '../../src/projections/projector.js';
import { inSchema, replayIntoSchema, tableContents } from '../../src/projections/replay.js';

/** Columns that number attempts rather than content: identity values consumed by rolled-back batches. */
const ATTEMPT_COLUMNS: Readonly<Record<string, readonly string[]>> = { telemetry_raw: ['applied'] };

/**
 * Tables of where a projector got to, not of what it projected: one row per partition live, one for the
 * whole projector in the replay.
 */
const PROGRESS_TABLES: ReadonlySet<string> = new Set(['telemetry_applied']);

export interface TableComparison {
  readonly table: string;
  readonly liveRows: number;
  readonly replayedRows: number;
  /** Rows in one and not the other (content, as JSON), at most a few of each. */
  readonly onlyLive: readonly string[];
  readonly onlyReplayed: readonly string[];
  readonly equal: boolean;
}

/**
 * Replays each projector's events into a fresh schema and compares every table's content with the live
 * one. Works for read models that refuse rebuilds too (state, telemetry): the replay never replaces them.
 * Call it once the live projectors have caught up with the head and nothing else is being written.
 */
export async function compareWithReplay(
  pool: Pool,
  store: EventStore,
  projectors: readonly Projector[],
  options: { batchSize?: number } = {},
): Promise<TableComparison[]> {
  const comparisons: TableComparison[] = [];
  for (const projector of projectors) {
    const schema = `replay_${projector.name.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}`;
    await replayIntoSchema(pool, store, projector, schema, { batchSize: options.batchSize ?? 2000 });
    try {
      // Batches of other sizes leave other work pending (telemetry's minutes): compare the settled forms.
      if (projector.settle) {
        await inTransaction(pool, (client) => projector.settle!(client));
        await inSchema(pool, schema, (client) => projector.settle!(client));
      }
      for (const table of projector.tables.filter((t) => !PROGRESS_TABLES.has(t))) {
        const exclude = ATTEMPT_COLUMNS[table] ?? [];
        const live = comparable(await tableContents(pool, 'public', table, exclude));
        const replayed = comparable(await tableContents(pool, schema, table, exclude));
        const replayedSet = new Set(replayed);
        const liveSet = new Set(live);
        const onlyLive = live.filter((r) => !replayedSet.has(r));
        const onlyReplayed = replayed.filter((r) => !liveSet.has(r));
        comparisons.push({
          table,
          liveRows: live.length,
          replayedRows: replayed.length,
          onlyLive: onlyLive.slice(0, 3),
          onlyReplayed: onlyReplayed.slice(0, 3),
          equal: live.length === replayed.length && live.every((row, i) => row === replayed[i]),
        });
      }
    } finally {
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    }
  }
  return comparisons;
}

/**
 * Rows with fractional numbers rounded to 12 significant digits, sorted. Floating-point addition is not
 * associative: a bucket's sum folded over batches split at other points (a crash, another batch size)
 * differs from the replay's in the last bits (about 1e-15 relative), while a reading lost or counted twice
 * changes `samples` and moves the sum far more than that.
 */
function comparable(rows: readonly string[]): string[] {
  const round = (_key: string, value: unknown) =>
    typeof value === 'number' && !Number.isInteger(value) ? Number(value.toPrecision(12)) : value;
  return rows.map((row) => JSON.stringify(JSON.parse(row), round)).sort();
}
