import type { Output } from './output.js';

/**
 * How a CLI command declares itself (src/cli/declarations/): its words, positional arguments and options.
 * program.ts builds the commander program from these declarations, so what a command accepts and what its
 * help and its line in `devcloud --help` say come from one place and cannot drift apart. A declaration's
 * `run` imports its implementation (src/cli/commands/) only when it runs: the declarations load nothing of
 * the service, so `--help`, a refusal and each command start without the code of every other command.
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

interface Invocation<O extends OptionSpecs> {
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
