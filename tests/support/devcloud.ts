import { execFile } from 'node:child_process';
import type { TestApi } from './api-harness.js';

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** The real `devcloud` binary against the suite's database; its exit code and both outputs. */
export function devcloud(api: Pick<TestApi, 'db'>, ...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['bin/devcloud.js', ...args],
      // A busy machine takes seconds just to start the CLI.
      { env: { PATH: process.env.PATH, DATABASE_URL: api.db.url }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
