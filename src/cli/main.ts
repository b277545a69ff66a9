import { parseArgs } from 'node:util';
import { ConfigError } from '../config.js';
import { migrateCommand } from './commands/migrate.js';
import { projectionsRebuild, projectionsStatus } from './commands/projections.js';
import { serve } from './commands/serve.js';
import { CliError, createOutput } from './output.js';

const USAGE = `usage: devcloud <command> [options]
  serve [--roles api,ingress,projector,scheduler]   run the service (all roles by default)
  migrate                                           apply database migrations
  projections status                                where each projector has got to
  projections rebuild [NAME]                        rebuild read models from the event store
options: --json   print one JSON object per line`;

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      json: { type: 'boolean', default: false },
      roles: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const out = createOutput(values.json === true);
  const [command, sub, arg] = positionals;
  if (values.help || !command) {
    process.stdout.write(USAGE + '\n');
    return;
  }
  switch (command) {
    case 'serve':
      return serve({ roles: values.roles });
    case 'migrate':
      return migrateCommand(out);
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
      (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    process.stderr.write(
      `devcloud: ${known ? (error as Error).message : `failed: ${(error as Error).message ?? String(error)}`}\n`,
    );
    process.exit(1);
  },
);
