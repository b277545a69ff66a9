import { commandHistory } from '../../audit/commands.js';
import { checkpointsCovering } from '../../audit/coverage.js';
import { grantHistory, grantsInForce } from '../../audit/grants.js';
import type { AuditFilter } from '../../audit/history.js';
import type { AuditPublicKey } from '../../audit/signing-keys.js';
import { storeConnection } from '../../audit/segment-threads.js';
import { verifyStoredHistory } from '../../audit/verify.js';
import { withCliContext, type CliContext } from '../context.js';
import { instant } from '../instant.js';
import { CliError, type Output } from '../output.js';
import { formatTable } from '../table.js';
import { readTrustedKeys } from '../trusted-keys.js';
import { progressOnStderr, reportVerification } from '../verification-report.js';
import { verifyBundleFile } from './audit-bundle.js';

/**
 * What `devcloud audit` runs (its declarations are in ../declarations/audit.ts): replays from the event store
 * (docs/commands.md, Audit), one JSON object per row with --json, a table otherwise; and `audit verify`.
 */
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

/** The history in the database verified (src/audit/verify.ts), or a bundle's offline (--bundle). */
export async function auditVerify(out: Output, options: VerifyCliOptions): Promise<void> {
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
      { store, pool: database.pool, connection: storeConnection(database.url, config) },
      { projectId: options.project, from, to, trustedKeys, threads, onProgress: progressOnStderr },
    ),
  );
}

export async function audit(
  out: Output,
  sub: 'grants' | 'commands',
  options: AuditCliOptions,
): Promise<void> {
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
