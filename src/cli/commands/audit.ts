import { commandHistory } from '../../audit/commands.js';
import { grantHistory, grantsInForce } from '../../audit/grants.js';
import type { AuditFilter } from '../../audit/history.js';
import { withCliContext } from '../context.js';
import { CliError, type Output } from '../output.js';
import { formatTable } from '../table.js';

export const AUDIT_USAGE = `  audit grants|commands [--project ID] [--device PUBLIC_ID] [--from T] [--to T]
                                                    replay grant changes or command steps from the event store
  audit grants --as-of T [--project ID] [--device PUBLIC_ID]
                                                    the grants in force at instant T`;

export interface AuditCliOptions {
  readonly project?: string;
  readonly device?: string;
  readonly from?: string;
  readonly to?: string;
  readonly 'as-of'?: string;
}

/**
 * `devcloud audit`: who did what, when, with what outcome, at which event position, replayed from the event
 * store (docs/commands.md, Audit). One JSON object per row with --json, a table otherwise.
 */
export async function auditCommand(
  out: Output,
  sub: string | undefined,
  options: AuditCliOptions,
): Promise<void> {
  if (sub !== 'grants' && sub !== 'commands') {
    throw new CliError(`audit: expected grants or commands, got ${sub ?? 'nothing'}`);
  }
  const filter: AuditFilter = {
    projectId: options.project,
    deviceId: options.device,
    from: instant('--from', options.from),
    to: instant('--to', options.to),
  };
  const asOf = instant('--as-of', options['as-of']);
  if (asOf !== undefined && sub !== 'grants') throw new CliError('audit: --as-of applies to audit grants');
  if (asOf !== undefined && (filter.from !== undefined || filter.to !== undefined)) {
    throw new CliError('audit grants: --as-of cannot be combined with --from or --to');
  }
  await withCliContext(async ({ store }) => {
    if (sub === 'commands') {
      const rows = await commandHistory(store, filter);
      print(out, rows, [
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
      print(out, rows, ['position', 'deviceId', 'capability', 'grantedAt', 'by', 'deviceStatus', 'profile']);
    } else {
      const rows = await grantHistory(store, filter);
      print(out, rows, ['position', 'at', 'deviceId', 'capability', 'change', 'by']);
    }
  });
}

function print<Row extends object>(
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

/** An ISO 8601 instant with a zone, normalised so instants compare as strings. */
function instant(name: string, raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const ms = /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:?\d{2}))?$/.test(raw) ? Date.parse(raw) : Number.NaN;
  if (!Number.isFinite(ms)) throw new CliError(`audit: ${name} must be an ISO 8601 instant, got ${raw}`);
  return new Date(ms).toISOString();
}
