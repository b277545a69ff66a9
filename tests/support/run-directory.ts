import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/**
 * What this test run owns, so that two runs on one machine share nothing: a temporary directory (the
 * embedded cluster and every suite's scratch files live under it; the root hooks remove it at the end) and
 * an id that names its databases on a shared server.
 */
export const RUN_ID = `${process.pid}_${randomBytes(3).toString('hex')}`;

let root: Promise<string> | undefined;

export function runDirectory(): Promise<string> {
  root ??= (async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), `devcloud-test-${RUN_ID}-`));
    // As root, PostgreSQL runs as `postgres`, which must reach the clusters kept in here.
    await chmod(dir, 0o755);
    return dir;
  })();
  return root;
}

/** A new, empty directory of this run's, e.g. a service's DATA_DIR. */
export async function tempDirectory(name: string): Promise<string> {
  return mkdtemp(path.join(await runDirectory(), `${name}-`));
}

/** A new, empty directory for an embedded cluster of its own (a DATA_DIR the service starts one under). */
export async function clusterDirectory(name: string): Promise<string> {
  const dir = await tempDirectory(name);
  // As root, PostgreSQL runs as `postgres`, which must reach the cluster in here; else it goes elsewhere.
  await chmod(dir, 0o755);
  return dir;
}

/** Removes the run's directory and all in it; whatever ran out of it must have stopped first. */
export async function removeRunDirectory(): Promise<void> {
  if (!root) return;
  const dir = await root;
  root = undefined;
  await rm(dir, { recursive: true, force: true });
}
