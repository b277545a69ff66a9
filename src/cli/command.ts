import type { Output } from './output.js';

/**
 * How a CLI command declares itself, next to its implementation: its words, positional arguments and
 * options. The parser (program.ts) accepts exactly these options for it, and its help and its line in
 * `devcloud --help` are written from the same declaration, so the two cannot drift apart.
 */
export interface OptionSpec {
  readonly type: 'string' | 'boolean';
  /** How usage shows a string option's value, e.g. ID. */
  readonly value?: string;
  /** Missing (or empty), the command stops before doing anything, naming every required option. */
  readonly required?: boolean;
  /** One line for the command's help. */
  readonly help: string;
}

export type OptionSpecs = Readonly<Record<string, OptionSpec>>;

export type OptionValues<O extends OptionSpecs> = {
  readonly [K in keyof O]?: O[K]['type'] extends 'boolean' ? boolean : string;
};

export interface Invocation<O extends OptionSpecs> {
  readonly out: Output;
  /** The positional arguments after the command's words, at most as many as it declares. */
  readonly args: readonly (string | undefined)[];
  readonly values: OptionValues<O>;
}

export interface Command<O extends OptionSpecs = OptionSpecs> {
  readonly name: string;
  /** Positional arguments as usage shows them: `AGENT_ID`, `[NAME]`. */
  readonly args?: readonly string[];
  /** One line: what `devcloud --help` says about it. */
  readonly summary: string;
  /** Further lines for its own help. */
  readonly details?: string;
  readonly options: O;
  run(invocation: Invocation<O>): Promise<void>;
}

/** A command word that only groups subcommands (`client create`, `client list`, ...). */
export interface CommandGroup {
  readonly name: string;
  readonly summary: string;
  readonly subcommands: readonly Command[];
}

/** Keeps the option names and types of `command` for its `run`, then lets it sit in the command table. */
export function defineCommand<O extends OptionSpecs>(command: Command<O>): Command {
  return command as unknown as Command;
}

export function isGroup(entry: Command | CommandGroup): entry is CommandGroup {
  return 'subcommands' in entry;
}

/** The option every command that prints a result takes. */
export const JSON_OUTPUT = {
  json: { type: 'boolean', help: 'print one JSON object per line' },
} as const satisfies OptionSpecs;

/** Taken by every command, and not declared by any. */
export const HELP_OPTION = { type: 'boolean', short: 'h' } as const;

const WIDTH = 110;
const SUMMARY_COLUMN = 52;

/** `client create --project ID [--name N]`: the words, the arguments, then required and optional options. */
export function synopsis(path: string, command: Command): string {
  const options = Object.entries(command.options).map(([name, spec]) => {
    const flag = spec.type === 'string' ? `--${name} ${spec.value ?? 'VALUE'}` : `--${name}`;
    return spec.required ? flag : `[${flag}]`;
  });
  return [path, ...(command.args ?? []), ...options].join(' ');
}

/** `devcloud <path> --help`. */
export function commandHelp(path: string, command: Command): string {
  const rows: [string, string][] = Object.entries(command.options).map(([name, spec]) => [
    spec.type === 'string' ? `--${name} ${spec.value ?? 'VALUE'}` : `--${name}`,
    spec.required ? `${spec.help} (required)` : spec.help,
  ]);
  rows.push(['-h, --help', 'print this help']);
  const left = Math.max(...rows.map(([flag]) => flag.length)) + 3;
  const [first, ...rest] = wrap(`devcloud ${synopsis(path, command)}`, WIDTH - 7);
  return [
    `usage: ${first}`,
    ...indent(rest, 7),
    '',
    ...wrap(command.summary, WIDTH),
    ...(command.details ? wrap(command.details, WIDTH) : []),
    '',
    'options:',
    ...rows.map(([flag, help]) => `  ${flag.padEnd(left)}${help}`),
  ].join('\n');
}

/** `devcloud <group> --help`: each subcommand's usage and what it does. */
export function groupHelp(group: CommandGroup): string {
  const words = group.subcommands.map((c) => c.name).join('|');
  return [
    `usage: devcloud ${group.name} <${words}> [options]`,
    '',
    ...wrap(group.summary, WIDTH),
    '',
    'commands:',
    ...group.subcommands.flatMap((command) => entry(`${group.name} ${command.name}`, command)),
    '',
    `devcloud ${group.name} <command> --help (or devcloud help ${group.name} <command>): its options`,
  ].join('\n');
}

/** `devcloud --help`: one entry per command, as its declaration has it. */
export function programHelp(entries: readonly (Command | CommandGroup)[]): string {
  return [
    'usage: devcloud <command> [options]',
    ...entries.flatMap((e) =>
      isGroup(e) ? e.subcommands.flatMap((c) => entry(`${e.name} ${c.name}`, c)) : entry(e.name, e),
    ),
    'devcloud <command> --help (or devcloud help <command>): what a command does and the options it takes',
  ].join('\n');
}

/** The synopsis, then the summary at SUMMARY_COLUMN: on the same line when the synopsis leaves room. */
function entry(path: string, command: Command): string[] {
  const [first = '', ...rest] = wrap(synopsis(path, command), WIDTH - 11);
  const summary = wrap(command.summary, WIDTH - SUMMARY_COLUMN);
  if (rest.length === 0 && first.length + 2 < SUMMARY_COLUMN - 1) {
    const [head = '', ...tail] = summary;
    return [`  ${first}`.padEnd(SUMMARY_COLUMN) + head, ...indent(tail, SUMMARY_COLUMN)];
  }
  return [`  ${first}`, ...indent(rest, 11), ...indent(summary, SUMMARY_COLUMN)];
}

/** Breaks `text` at spaces into lines of at most `width` (a longer word keeps a line of its own). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  }
  lines.push(line);
  return lines;
}

function indent(lines: readonly string[], by: number): string[] {
  return lines.map((line) => ' '.repeat(by) + line);
}
