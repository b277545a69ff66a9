import { Command as CommanderCommand, CommanderError, Option } from 'commander';
import {
  isGroup,
  type Command,
  type CommandGroup,
  type OptionSpec,
  type OptionSpecs,
  type OptionValues,
} from './command.js';
import { agentCommands } from './declarations/agents.js';
import { auditCommands } from './declarations/audit.js';
import { clientCommands } from './declarations/clients.js';
import { deviceCommands } from './declarations/device.js';
import { edgeSimCommand } from './declarations/edge-sim.js';
import { keysCommands } from './declarations/keys.js';
import { migrateCommand } from './declarations/migrate.js';
import { pairingCommands } from './declarations/pairing.js';
import { projectionsCommands } from './declarations/projections.js';
import { projectCommands } from './declarations/projects.js';
import { serveCommand } from './declarations/serve.js';
import { siteCommands } from './declarations/sites.js';
import { CliError, createOutput } from './output.js';

/**
 * Every command, in the order `devcloud --help` lists them: their declarations only. Each loads what it runs
 * (src/cli/commands/) when it runs, so help, refusals and each command start without the rest of the service.
 */
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

/** Help is wrapped to this width whatever the terminal, so it reads the same on a terminal and in a pipe. */
const HELP_WIDTH = 110;
const HELP_FLAGS = ['-h', '--help'];

/**
 * Runs one `devcloud` invocation: commander finds the command from its words and refuses any option or
 * argument that command does not declare before anything runs, or prints the help asked for; then the
 * command runs. Resolves with the exit code; a refusal or failure is one line on stderr and exit code 1.
 */
export async function runCli(argv: readonly string[], io: CliIo = processIo): Promise<number> {
  try {
    await buildProgram(io).parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (error) {
    // Refusals are CliErrors (see refusal): a CommanderError here is help printed, and its exit code 0.
    if (error instanceof CommanderError) return error.exitCode;
    // A ConfigError comes from a command that has loaded the configuration already: importing it here
    // costs nothing then, and the declarations stay free of the configuration's schema (zod).
    const known = error instanceof CliError || error instanceof (await import('../config.js')).ConfigError;
    const message = error instanceof Error ? error.message : String(error);
    io.stderr(`devcloud: ${known ? message : `failed: ${message}`}`.split('\n')[0] + '\n');
    return 1;
  }
}

/** The commander program for COMMANDS: a group for each word that has subcommands, `help`, and the rest. */
function buildProgram(io: CliIo): CommanderCommand {
  // What a list of commands shows for each: its words, arguments and required options.
  const terms = new Map<CommanderCommand, string>();
  const program = new CommanderCommand('devcloud')
    .usage('<command> [options]')
    // runCli writes every refusal itself, as one line; help goes to stdout.
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr, outputError: () => {} })
    .configureHelp({
      helpWidth: HELP_WIDTH,
      // The widest entry (device status and its states) leaves 38 columns to wrap what it does into.
      minWidthToWrap: 30,
      // A list of commands names what runs, `client create`, rather than the `client` group.
      visibleCommands: (command) =>
        command.commands
          .flatMap((c) => (c.commands.length > 0 ? c.commands : [c]))
          .filter((c) => c.name() !== 'help'),
      subcommandTerm: (command) => terms.get(command) ?? command.name(),
    })
    .helpOption('-h, --help', 'print this help')
    .helpCommand(false)
    .showSuggestionAfterError(false)
    // Help ends the parse by throwing; runCli turns that into its exit code.
    .exitOverride();
  for (const entry of COMMANDS) {
    if (isGroup(entry)) addGroup(program, entry, terms);
    else addCommand(program, entry, terms);
  }
  const help = program
    .command('help')
    .argument('[words...]')
    .helpOption(false)
    .allowUnknownOption()
    .action(async () => {
      const words = help.args.filter((word) => !word.startsWith('-'));
      if (words[0] !== undefined && !COMMANDS.some((e) => e.name === words[0])) {
        throw unknownCommand(words[0]);
      }
      await buildProgram(io).parseAsync([...words, '--help'], { from: 'user' });
    });
  // Set after the commands are added, which would otherwise inherit them: the program itself takes no
  // option, so its action sees `--help`, an unknown word or a stray option and answers each.
  program
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .addHelpText(
      'after',
      '\ndevcloud <command> --help (or devcloud help <command>): what a command does and the options it takes',
    )
    .action(() => {
      const word = program.args.find((arg) => !arg.startsWith('-'));
      // A command's word would have reached that command.
      if (word !== undefined) throw unknownCommand(word);
      const option = program.args.find((arg) => arg !== '--' && !HELP_FLAGS.includes(arg));
      if (option !== undefined) {
        throw new CliError(`${option.split('=')[0]} needs a command; see devcloud --help`);
      }
      program.outputHelp();
    });
  return program;
}

function addGroup(
  program: CommanderCommand,
  group: CommandGroup,
  terms: Map<CommanderCommand, string>,
): void {
  const words = group.subcommands.map((c) => c.name);
  const command = program
    .command(group.name)
    .description(group.summary)
    .usage(`<${words.join('|')}> [options]`)
    .addHelpText(
      'after',
      `\ndevcloud ${group.name} <command> --help (or devcloud help ${group.name} <command>): its options`,
    );
  for (const sub of group.subcommands) addCommand(command, sub, terms);
  // Reached only without a subcommand's word: refused, naming the words it takes.
  command
    .allowUnknownOption()
    .allowExcessArguments()
    .action(() => {
      const got = command.args.find((arg) => !arg.startsWith('-')) ?? 'nothing';
      throw new CliError(
        `${group.name}: expected ${list(words, 'or')}, got ${got}; see devcloud ${group.name} --help`,
      );
    });
}

/**
 * One declared command. commander refuses undeclared options, a missing option value and surplus arguments;
 * the required options are checked here, all named at once and an empty value counting as missing, before
 * the command runs (and so before it opens any database).
 */
function addCommand(parent: CommanderCommand, declared: Command, terms: Map<CommanderCommand, string>): void {
  const command = parent.command(declared.name);
  const path = wordsOf(command).join(' ');
  const options = Object.entries(declared.options);
  const required = options.filter(([, spec]) => spec.required).map(([name, spec]) => flagOf(name, spec));
  const synopsis = [...(declared.args ?? []), ...required];
  terms.set(command, [path, ...synopsis].join(' '));
  command
    .summary(declared.summary)
    .description([declared.summary, declared.details].filter(Boolean).join('\n'))
    .usage([...synopsis, ...(required.length < options.length ? ['[options]'] : [])].join(' '))
    .allowExcessArguments(false)
    .exitOverride((error) => {
      throw refusal(path, command, error);
    });
  // Optional for commander: a command itself says what a missing argument means.
  for (const arg of declared.args ?? []) command.argument(`[${arg.replace(/^\[(.*)\]$/, '$1')}]`);
  for (const [name, spec] of options) {
    const option = new Option(
      spec.type === 'string' ? `--${name} <value>` : `--${name}`,
      spec.required ? `${spec.help} (required)` : spec.help,
    );
    // Help names the value as declared (`--scopes "S1 S2"`), which commander's flag syntax cannot spell.
    option.flags = flagOf(name, spec);
    command.addOption(option);
  }
  command.action(async () => {
    const values: Record<string, string | boolean> = {};
    for (const option of command.options) {
      const value = command.getOptionValue(option.attributeName()) as string | boolean | undefined;
      if (value !== undefined) values[option.name()] = value;
    }
    if (options.some(([name, spec]) => spec.required && (values[name] ?? '') === '')) {
      throw new CliError(`${path}: ${list(required, 'and')} ${required.length > 1 ? 'are' : 'is'} required`);
    }
    await declared.run({
      out: createOutput(values.json === true),
      args: command.args,
      // The declaration typed each option for its command; here they are only names.
      values: values as OptionValues<OptionSpecs>,
    });
  });
}

/** commander's refusal of an invocation of `path`, worded as README.md (Operator CLI) promises. */
function refusal(path: string, command: CommanderCommand, error: CommanderError): Error {
  const see = `; see devcloud ${path} --help`;
  if (error.code === 'commander.unknownOption') {
    const [flag = ''] = (/unknown option '(.*)'/s.exec(error.message)?.[1] ?? '').split('=');
    return command.options.some((option) => option.long === flag)
      ? new CliError(`${path}: ${flag} takes no value${see}`)
      : new CliError(`${path} does not take ${flag}${see}`);
  }
  if (error.code === 'commander.excessArguments') {
    return new CliError(
      `${path}: unexpected argument ${command.args[command.registeredArguments.length]}${see}`,
    );
  }
  // Help was printed: runCli ends with its exit code.
  if (error.exitCode === 0) return error;
  return new CliError(`${path}: ${error.message.replace(/^error: /, '')}${see}`);
}

function unknownCommand(word: string): CliError {
  return new CliError(`unknown command ${word}; see devcloud --help`);
}

/** The command's words after `devcloud`: `client create`. */
function wordsOf(command: CommanderCommand): string[] {
  return command.parent ? [...wordsOf(command.parent), command.name()] : [];
}

/** `--project ID`, `--json`: an option as usage and help show it. */
function flagOf(name: string, spec: OptionSpec): string {
  return spec.type === 'string' ? `--${name} ${spec.value ?? 'VALUE'}` : `--${name}`;
}

function list(words: readonly string[], conjunction: 'and' | 'or'): string {
  return words.length <= 1
    ? words.join('')
    : `${words.slice(0, -1).join(', ')} ${conjunction} ${words.at(-1)!}`;
}
