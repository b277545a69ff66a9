/** How CLI commands speak: one JSON object per line with --json, readable lines otherwise. */
export interface Output {
  readonly json: boolean;
  result(value: Record<string, unknown>, human?: string): void;
  progress(value: Record<string, unknown>): void;
}

export function createOutput(json: boolean): Output {
  return {
    json,
    result(value, human) {
      process.stdout.write(
        json ? JSON.stringify(value) + '\n' : (human ?? JSON.stringify(value, null, 2)) + '\n',
      );
    },
    progress(value) {
      if (json) process.stdout.write(JSON.stringify(value) + '\n');
    },
  };
}

/** A failure the CLI reports as one line and a non-zero exit, without a stack. */
export class CliError extends Error {}
