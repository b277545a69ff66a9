import { defineCommand, JSON_OUTPUT, type CommandGroup } from '../command.js';

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

/**
 * `devcloud audit`: who did what, when, with what outcome, at which event position, replayed from the event
 * store (docs/commands.md, Audit). One JSON object per row with --json, a table otherwise. Then what an
 * auditor takes out of the system (docs/audit.md, "The auditor's procedure"): a bundle to verify offline,
 * the newest signed heads to record, and the public keys to trust.
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
      run: async ({ out, values }) => (await import('../commands/audit.js')).audit(out, 'grants', values),
    }),
    defineCommand({
      name: 'commands',
      summary: 'replay command steps from the event store',
      details: 'A table, or one JSON object per row with --json.',
      options: { ...FILTERS, ...CHECKPOINTS, ...JSON_OUTPUT },
      run: async ({ out, values }) => (await import('../commands/audit.js')).audit(out, 'commands', values),
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
      run: async ({ out, values }) => (await import('../commands/audit.js')).auditVerify(out, values),
    }),
    defineCommand({
      name: 'export',
      summary: "write a project's signed audit history as a bundle that verifies offline",
      details:
        'JSON Lines: the events, their links, the checkpoints that sign them and the public keys. It ends at ' +
        'the last checkpoint within the window, so every event in it is signed.',
      options: {
        project: { type: 'string', value: 'ID', required: true, help: 'the project' },
        from: { type: 'string', value: 'T', help: 'events recorded from this ISO 8601 instant on' },
        to: { type: 'string', value: 'T', help: 'events recorded before this ISO 8601 instant' },
        out: { type: 'string', value: 'FILE', required: true, help: 'the bundle file to write' },
        ...JSON_OUTPUT,
      },
      run: async ({ out, values }) => (await import('../commands/audit-chain.js')).auditExport(out, values),
    }),
    defineCommand({
      name: 'head',
      summary: "each project's newest signed checkpoint: what an auditor records outside the system",
      options: { project: { type: 'string', value: 'ID', help: 'only this project' }, ...JSON_OUTPUT },
      run: async ({ out, values }) =>
        (await import('../commands/audit-chain.js')).auditHead(out, values.project),
    }),
    defineCommand({
      name: 'keys',
      args: ['list|rotate|export'],
      summary: 'the audit signing keys: list them, rotate to a new one, or export the public keys',
      details:
        'export writes the public keys (to --out FILE, or stdout) as the file `audit verify --trusted-keys` ' +
        'reads. rotate retires the signing key (its public part is kept) and signs with a new one.',
      options: { out: { type: 'string', value: 'FILE', help: 'export: the file to write' }, ...JSON_OUTPUT },
      run: async ({ out, args, values }) =>
        (await import('../commands/audit-chain.js')).auditKeys(out, args[0], values.out),
    }),
  ],
};
