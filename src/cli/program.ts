import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError } from '../config.js';
import {
  HELP_OPTION,
  commandHelp,
  groupHelp,
  isGroup,
  programHelp,
  type Command,
  type CommandGroup,
  type OptionSpecs,
  type OptionValues,
} from './command.js';
import { agentCommands } from './commands/agents.js';
import { auditCommands } from './commands/audit.js';
import { clientCommands } from './commands/clients.js';
import { deviceCommands } from './commands/device.js';
import { edgeSimCommand } from './commands/edge-sim.js';
import { keysCommands } from './commands/keys.js';
import { migrateCommand } from './commands/migrate.js';
import { pairingCommands } from './commands/pairing.js';
import { projectionsCommands } from './commands/projections.js';
import { projectCommands } from './commands/projects.js';
import { serveCommand } from './commands/serve.js';
import { siteCommands } from './commands/sites.js';
import { CliError, createOutput } from './output.js';

/** Every command, in the order `devcloud --help` lists them. */
export const COMMANDS: readonly (Command | CommandGroup)[] = [
  serveCommand,
  migrateCommand,
  projectionsCommands,
  projectCommands,
  clientCommands,
  keysCommands,
  siteCommands,
  agentCommands,
  deviceCommands,
  pairingCommands,
  edgeSimCommand,
  auditCommands,
];

export interface CliIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
}

const processIo: CliIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
};

/**
 * Runs one `devcloud` invocation: finds the command from its words, refuses any option that command does
 * not declare before anything runs, prints help where asked, then runs it. Resolves with the exit code;
 * a refusal or failure is one line on stderr and exit code 1.
 */
export async function runCli(argv: readonly string[], io: CliIo = processIo): Promise<number> {
  try {
    await dispatch([...argv], io);
    return 0;
  } catch (error) {
    const known =
      error instanceof CliError ||
      error instanceof ConfigError ||
      String((error as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS');
    const message = error instanceof Error ? error.message : String(error);
    io.stderr(`devcloud: ${known ? message : `failed: ${message}`}`.split('\n')[0] + '\n');
    return 1;
  }
}

async function dispatch(argv: string[], io: CliIo): Promise<void> {
  // Words first: the union of every command's options tells which tokens are option values.
  const { positionals, tokens, help } = scan(argv, everyOption());
  const [first, second, third] = positionals;
  if (first === undefined) {
    const option = tokens.find((t) => t.kind === 'option' && t.name !== 'help');
    if (option?.kind === 'option')
      throw new CliError(`${option.rawName} needs a command; see devcloud --help`);
    io.stdout(programHelp(COMMANDS) + '\n');
    return;
  }
  if (first === 'help') {
    io.stdout(helpFor(second, third) + '\n');
    return;
  }
  const entry = find(first);
  let command: Command;
  let path: string;
  if (isGroup(entry)) {
    const sub = entry.subcommands.find((c) => c.name === second);
    if (!sub) {
      if (help) {
        io.stdout(groupHelp(entry) + '\n');
        return;
      }
      const words = entry.subcommands.map((c) => c.name);
      throw new CliError(
        `${entry.name}: expected ${orList(words)}, got ${second ?? 'nothing'}; see devcloud ${entry.name} --help`,
      );
    }
    command = sub;
    path = `${entry.name} ${sub.name}`;
  } else {
    command = entry;
    path = entry.name;
  }
  await runCommand(command, path, argv, io);
}

async function runCommand(command: Command, path: string, argv: string[], io: CliIo): Promise<void> {
  const options = { ...toParseArgs(command.options), help: HELP_OPTION };
  const { tokens, help } = scan(argv, options);
  if (help) {
    io.stdout(commandHelp(path, command) + '\n');
    return;
  }
  const unknown = tokens.find((t) => t.kind === 'option' && !(t.name in options));
  if (unknown?.kind === 'option') {
    throw new CliError(`${path} does not take ${unknown.rawName}; see devcloud ${path} --help`);
  }
  // Strict now: a string option without its value, or a value given to a boolean, is refused here.
  const parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  const values = parsed.values as Record<string, string | boolean | undefined>;
  const positionals = parsed.positionals;
  const args = positionals.slice(path.split(' ').length);
  const declared = command.args ?? [];
  if (args.length > declared.length) {
    throw new CliError(`${path}: unexpected argument ${args[declared.length]}; see devcloud ${path} --help`);
  }
  const missing = Object.entries(command.options).filter(
    ([name, spec]) => spec.required && (values[name] === undefined || values[name] === ''),
  );
  if (missing.length > 0) {
    const required = Object.entries(command.options)
      .filter(([, spec]) => spec.required)
      .map(([name, spec]) => `--${name} ${spec.value ?? 'VALUE'}`);
    throw new CliError(`${path}: ${andList(required)} ${required.length > 1 ? 'are' : 'is'} required`);
  }
  await command.run({
    out: createOutput(values.json === true),
    args,
    // The declaration typed each option for its command; here they are only names.
    values: values as OptionValues<OptionSpecs>,
  });
}

/** `devcloud help [command [subcommand]]`. */
function helpFor(word: string | undefined, sub: string | undefined): string {
  if (word === undefined) return programHelp(COMMANDS);
  const entry = find(word);
  if (!isGroup(entry)) return commandHelp(entry.name, entry);
  const command = entry.subcommands.find((c) => c.name === sub);
  return command ? commandHelp(`${entry.name} ${command.name}`, command) : groupHelp(entry);
}

function find(word: string): Command | CommandGroup {
  const entry = COMMANDS.find((e) => e.name === word);
  if (!entry) throw new CliError(`unknown command ${word}; see devcloud --help`);
  return entry;
}

type ParseOptions = NonNullable<ParseArgsConfig['options']>;

function toParseArgs(specs: OptionSpecs): ParseOptions {
  return Object.fromEntries(Object.entries(specs).map(([name, spec]) => [name, { type: spec.type }]));
}

function everyOption(): ParseOptions {
  const all: ParseOptions = { help: HELP_OPTION };
  for (const entry of COMMANDS) {
    for (const command of isGroup(entry) ? entry.subcommands : [entry]) {
      Object.assign(all, toParseArgs(command.options));
    }
  }
  return all;
}

/** A lenient pass: what the words are, which options were given, whether help was asked for. */
function scan(argv: string[], options: ParseOptions) {
  const { positionals, tokens, values } = parseArgs({
    args: argv,
    options,
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  return { positionals, tokens, help: values.help === true };
}

const orList = (words: readonly string[]) => list(words, 'or');
const andList = (words: readonly string[]) => list(words, 'and');

function list(words: readonly string[], conjunction: string): string {
  return words.length <= 1
    ? words.join('')
    : `${words.slice(0, -1).join(', ')} ${conjunction} ${words.at(-1)!}`;
}
