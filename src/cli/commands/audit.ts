import { commandHistory } from '../../audit/commands.js';
import { checkpointsCovering } from '../../audit/coverage.js';
import { grantHistory, grantsInForce } from '../../audit/grants.js';
import type { AuditFilter } from '../../audit/history.js';
import type { AuditPublicKey } from '../../audit/signing-keys.js';
import { verifyStoredHistory } from '../../audit/verify.js';
import { defineCommand, JSON_OUTPUT, type CommandGroup } from '../command.js';
import { withCliContext, type CliContext } from '../context.js';
import { instant } from '../instant.js';
import { CliError, type Output } from '../output.js';
import { formatTable } from '../table.js';
import { readTrustedKeys } from '../trusted-keys.js';
import { progressOnStderr, reportVerification } from '../verification-report.js';
import { verifyBundleFile } from './audit-bundle.js';
import { auditChainCommands } from './audit-chain.js';

const FILTERS = {
  project: { type: 'string', value: 'ID', help: "only this project's devices" },
  device: { type: 'string', value: 'PUBLIC_ID', help: 'only this device' },
  from: { type: 'string', value: 'T', help: 'from this ISO 8601 instant on' },
  to: { type: 'string', value: 'T', help: 'before this ISO 8601 instant' },
} as const;

const CHECKPOINTS = {
  checkpoints: {
    type: 'boolean',
    help: 'beside each row, the first checkpoint that signs it (sequence, signedAt), or unsigned',
  },
} as const;

interface AuditCliOptions {
  readonly project?: string;
  readonly device?: string;
  readonly from?: string;
  readonly to?: string;
  readonly 'as-of'?: string;
  readonly checkpoints?: boolean;
}

interface VerifyCliOptions {
  readonly project?: string;
  readonly from?: string;
  readonly to?: string;
  readonly 'trusted-keys'?: string;
  readonly bundle?: string;
  readonly threads?: string;
}

/** More threads than this would only queue on the database's connections and cores. */
const MAX_VERIFY_THREADS = 32;

/**
 * `devcloud audit`: who did what, when, with what outcome, at which event position, replayed from the event
 * store (docs/commands.md, Audit). One JSON object per row with --json, a table otherwise.
 */
export const auditCommands: CommandGroup = {
  name: 'audit',
  summary: 'who did what, when, with what outcome: replayed from the event store (docs/commands.md)',
  subcommands: [
    defineCommand({
      name: 'grants',
      summary: 'replay grant changes from the event store, or (--as-of T) the grants in force at instant T',
      details: 'A table, or one JSON object per row with --json.',
      options: {
        ...FILTERS,
        'as-of': {
          type: 'string',
          value: 'T',
          help: 'the grants in force at this instant (not with --from, --to)',
        },
        ...CHECKPOINTS,
        ...JSON_OUTPUT,
      },
      run: ({ out, values }) => audit(out, 'grants', values),
    }),
    defineCommand({
      name: 'commands',
      summary: 'replay command steps from the event store',
      details: 'A table, or one JSON object per row with --json.',
      options: { ...FILTERS, ...CHECKPOINTS, ...JSON_OUTPUT },
      run: ({ out, values }) => audit(out, 'commands', values),
    }),
    defineCommand({
      name: 'verify',
      summary: 'recompute the audit chains from the event store and check every signed checkpoint',
      details:
        'Names the first position where the history differs (changed, removed, inserted, reordered) and exits ' +
        'non-zero. Progress on stderr on long runs; one JSON line with --json. --from/--to select by ' +
        'recording time. --trusted-keys FILE (from `audit keys export`) trusts only those keys. --bundle FILE ' +
        'verifies an exported bundle instead, offline: no database is opened.',
      options: {
        bundle: {
          type: 'string',
          value: 'FILE',
          help: 'verify this bundle (`audit export`) offline instead',
        },
        project: { type: 'string', value: 'ID', help: "only this project's chain" },
        from: FILTERS.from,
        to: FILTERS.to,
        'trusted-keys': { type: 'string', value: 'FILE', help: 'trust only the audit keys in FILE' },
        threads: {
          type: 'string',
          value: 'N',
          help: 'verify N stretches of the history at once (default: one a core, for 100,000 events a core or more)',
        },
        ...JSON_OUTPUT,
      },
      run: ({ out, values }) => auditVerify(out, values),
    }),
    ...auditChainCommands,
  ],
};

/** The history in the database verified (src/audit/verify.ts), or a bundle's offline (--bundle). */
async function auditVerify(out: Output, options: VerifyCliOptions): Promise<void> {
  if (options.bundle !== undefined) {
    if (options.project ?? options.from ?? options.to ?? options.threads) {
      throw new CliError(
        'audit verify: --bundle takes no --project, --from, --to or --threads (the bundle says what it holds)',
      );
    }
    return verifyBundleFile(out, { bundle: options.bundle, trustedKeys: options['trusted-keys'] });
  }
  const trustedKeys =
    options['trusted-keys'] === undefined ? undefined : await readTrustedKeys(options['trusted-keys']);
  reportVerification(out, await verifyDatabase(options, trustedKeys));
}

async function verifyDatabase(options: VerifyCliOptions, trustedKeys: AuditPublicKey[] | undefined) {
  const from = instant('audit verify', '--from', options.from);
  const to = instant('audit verify', '--to', options.to);
  const threads = options.threads === undefined ? undefined : Number(options.threads);
  if (
    threads !== undefined &&
    (!/^\d+$/.test(options.threads!) || threads < 1 || threads > MAX_VERIFY_THREADS)
  )
    throw new CliError(`audit verify: --threads must be a whole number from 1 to ${MAX_VERIFY_THREADS}`);
  return withCliContext(({ config, store, database }) =>
    verifyStoredHistory(
      // Its other threads (one a core) open their own connections to the same store.
      { store, pool: database.pool, connection: { databaseUrl: database.url, eventStore: config } },
      { projectId: options.project, from, to, trustedKeys, threads, onProgress: progressOnStderr },
    ),
  );
}

async function audit(out: Output, sub: 'grants' | 'commands', options: AuditCliOptions): Promise<void> {
  const filter: AuditFilter = {
    projectId: options.project,
    deviceId: options.device,
    from: instant('audit', '--from', options.from),
    to: instant('audit', '--to', options.to),
  };
  const asOf = instant('audit', '--as-of', options['as-of']);
  if (asOf !== undefined && (filter.from !== undefined || filter.to !== undefined)) {
    throw new CliError('audit grants: --as-of cannot be combined with --from or --to');
  }
  await withCliContext(async (context) => {
    const { store } = context;
    const print = async <Row extends { position: string }>(
      rows: readonly Row[],
      columns: readonly (keyof Row & string)[],
    ) => (options.checkpoints ? printCovered(context, out, rows, columns) : printRows(out, rows, columns));
    if (sub === 'commands') {
      const rows = await commandHistory(store, filter);
      await print(rows, [
        'position',
        'at',
        'commandId',
        'deviceId',
        'capability',
        'value',
        'mode',
        'step',
        'status',
        'by',
        'detail',
      ]);
    } else if (asOf !== undefined) {
      const rows = await grantsInForce(store, asOf, filter);
      await print(rows, ['position', 'deviceId', 'capability', 'grantedAt', 'by', 'deviceStatus', 'profile']);
    } else {
      const rows = await grantHistory(store, filter);
      await print(rows, ['position', 'at', 'deviceId', 'capability', 'change', 'by']);
    }
  });
}

/** The rows with the checkpoint that signs each (checkpointsCovering), as a last column. */
async function printCovered<Row extends { position: string }>(
  context: CliContext,
  out: Output,
  rows: readonly Row[],
  columns: readonly (keyof Row & string)[],
): Promise<void> {
  const covering = await checkpointsCovering(
    { store: context.store, pool: context.database.pool },
    rows.map((r) => r.position),
  );
  const covered = rows.map((row) => {
    const c = covering.get(row.position);
    const checkpoint = c ? (out.json ? c : `#${c.sequence} ${c.signedAt}`) : 'unsigned';
    return { ...row, checkpoint };
  });
  printRows(out, covered, [...columns, 'checkpoint']);
}

function printRows<Row extends object>(
  out: Output,
  rows: readonly Row[],
  columns: readonly (keyof Row & string)[],
): void {
  if (out.json) {
    for (const row of rows) out.result(row as Record<string, unknown>);
    return;
  }
  if (rows.length === 0) {
    process.stdout.write('(nothing recorded)\n');
    return;
  }
  process.stdout.write(
    formatTable(
      columns,
      rows.map((row) => columns.map((c) => String(row[c]))),
    ) + '\n',
  );
}
