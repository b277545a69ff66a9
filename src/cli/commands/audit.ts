import { commandHistory } from '../../audit/commands.js';
import { grantHistory, grantsInForce } from '../../audit/grants.js';
import type { AuditFilter } from '../../audit/history.js';
import { defineCommand, JSON_OUTPUT, type CommandGroup } from '../command.js';
import { withCliContext } from '../context.js';
import { CliError, type Output } from '../output.js';
import { formatTable } from '../table.js';
import { verifyBundleFile } from './audit-bundle.js';

const FILTERS = {
  project: { type: 'string', value: 'ID', help: "only this project's devices" },
  device: { type: 'string', value: 'PUBLIC_ID', help: 'only this device' },
  from: { type: 'string', value: 'T', help: 'from this ISO 8601 instant on' },
  to: { type: 'string', value: 'T', help: 'before this ISO 8601 instant' },
} as const;

interface AuditCliOptions {
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
        ...JSON_OUTPUT,
      },
      run: ({ out, values }) => audit(out, 'grants', values),
    }),
    defineCommand({
      name: 'commands',
      summary: 'replay command steps from the event store',
      details: 'A table, or one JSON object per row with --json.',
      options: { ...FILTERS, ...JSON_OUTPUT },
      run: ({ out, values }) => audit(out, 'commands', values),
    }),
    defineCommand({
      name: 'verify',
      summary:
        'verify an exported audit bundle offline: its chain, checkpoints and signatures (docs/audit.md)',
      details: 'Exits non-zero naming the first position where history differs. Opens no database.',
      options: {
        bundle: { type: 'string', value: 'FILE', required: true, help: 'the bundle `audit export` wrote' },
        'trusted-keys': {
          type: 'string',
          value: 'FILE',
          help: "audit public keys you recorded (`audit keys export`), instead of the bundle's own",
        },
        ...JSON_OUTPUT,
      },
      run: ({ out, values }) =>
        verifyBundleFile(out, { bundle: values.bundle!, trustedKeys: values['trusted-keys'] }),
    }),
  ],
};

async function audit(out: Output, sub: 'grants' | 'commands', options: AuditCliOptions): Promise<void> {
  const filter: AuditFilter = {
    projectId: options.project,
    deviceId: options.device,
    from: instant('--from', options.from),
    to: instant('--to', options.to),
  };
  const asOf = instant('--as-of', options['as-of']);
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
