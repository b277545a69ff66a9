import { execFile, spawn } from 'node:child_process';
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

/**
 * The real `devcloud` binary against a database, with the rest of this process's environment and a batch
 * size of its own: its exit code, its stdout as lines, and its stderr.
 */
export function devcloudLines(
  args: string[],
  databaseUrl: string,
  batchSize: number,
): Promise<{ code: number; lines: string[]; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['bin/devcloud.js', ...args], {
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        LOG_LEVEL: 'warn',
        PROJECTION_BATCH_SIZE: String(batchSize),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('exit', (code) =>
      resolve({ code: code ?? -1, lines: out.split('\n').filter(Boolean), stderr: err }),
    );
  });
}
