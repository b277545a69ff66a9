import { parseArgs } from 'node:util';
import { ConfigError } from '../config.js';
import { AGENTS_USAGE, agentCommand } from './commands/agents.js';
import { AUDIT_USAGE, auditCommand } from './commands/audit.js';
import { DEVICE_USAGE, deviceCommand } from './commands/device.js';
import { EDGE_SIM_USAGE, edgeSimCommand } from './commands/edge-sim.js';
import { IDENTITY_USAGE, identityCommand } from './commands/identity.js';
import { migrateCommand } from './commands/migrate.js';
import { PAIRING_USAGE, pairingCommand } from './commands/pairing.js';
import { projectionsRebuild, projectionsStatus } from './commands/projections.js';
import { serve } from './commands/serve.js';
import { SITES_USAGE, siteCommand } from './commands/sites.js';
import { SOAK_USAGE, soakCommand } from './commands/soak.js';
import { CliError, createOutput } from './output.js';

const USAGE = `usage: devcloud <command> [options]
  serve [--roles api,ingress,projector,scheduler]   run the service (all roles by default)
  migrate                                           apply database migrations
  projections status                                where each projector has got to
  projections rebuild [NAME]                        rebuild read models from the event store
${IDENTITY_USAGE}
${SITES_USAGE}
${AGENTS_USAGE}
${DEVICE_USAGE}
${PAIRING_USAGE}
${EDGE_SIM_USAGE}
${AUDIT_USAGE}
${SOAK_USAGE}
options: --json   print one JSON object per line`;

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      json: { type: 'boolean', default: false },
      roles: { type: 'string' },
      name: { type: 'string' },
      project: { type: 'string' },
      scopes: { type: 'string' },
      auth: { type: 'string' },
      timezone: { type: 'string' },
      site: { type: 'string' },
      out: { type: 'string' },
      hub: { type: 'string' },
      ieee: { type: 'string' },
      agent: { type: 'string' },
      devices: { type: 'string' },
      rate: { type: 'string' },
      duration: { type: 'string' },
      seed: { type: 'string' },
      'fail-capabilities': { type: 'string' },
      'fail-rate': { type: 'string' },
      'apply-delay-ms': { type: 'string' },
      'ack-delay-ms': { type: 'string' },
      device: { type: 'string' },
      from: { type: 'string' },
      to: { type: 'string' },
      'as-of': { type: 'string' },
      reason: { type: 'string' },
      minutes: { type: 'string' },
      kills: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const out = createOutput(values.json === true);
  const [command, sub, arg, target] = positionals;
  if (values.help || !command) {
    process.stdout.write(USAGE + '\n');
    return;
  }
  switch (command) {
    case 'serve':
      return serve({ roles: values.roles });
    case 'migrate':
      return migrateCommand(out);
    case 'project':
    case 'client':
    case 'keys':
      return identityCommand(out, command, sub, arg, values);
    case 'site':
      return siteCommand(out, sub, values);
    case 'agent':
      return agentCommand(out, sub, arg, values);
    case 'pairing':
      return pairingCommand(out, sub, values);
    case 'device':
      return deviceCommand(out, sub, arg, target, values);
    case 'edge-sim':
      return edgeSimCommand(out, values);
    case 'audit':
      return auditCommand(out, sub, values);
    case 'soak':
      return soakCommand(values);
    case 'projections':
      if (sub === 'status') return projectionsStatus(out);
      if (sub === 'rebuild') return projectionsRebuild(out, arg);
      throw new CliError(`projections: expected status or rebuild, got ${sub ?? 'nothing'}`);
    default:
      throw new CliError(`unknown command ${command}; see devcloud --help`);
  }
}

main(process.argv.slice(2)).then(
  () => {
    // Commands close what they open; the exit guards against a stray handle keeping the CLI alive.
    if (process.argv[2] !== 'serve') process.exit(process.exitCode ?? 0);
  },
  (error: unknown) => {
    const known =
      error instanceof CliError ||
      error instanceof ConfigError ||
      String((error as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS');
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`devcloud: ${known ? message : `failed: ${message}`}`.split('\n')[0] + '\n');
    process.exit(1);
  },
);
