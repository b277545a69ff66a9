import { randomBytes } from 'node:crypto';
import { link, mkdir, open, readFile, rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The edge CA on disk: `ca.key` (PKCS#8, mode 0600) and `ca.pem`. The key is the source of truth and is
 * installed first, with link(2): unlike rename it never replaces an existing file, so when processes race
 * to create the CA exactly one key wins and every loser loads it.
 */
const KEY_FILE = 'ca.key';
const CERT_FILE = 'ca.pem';

// How long a loser waits for the winner to install ca.pem after ca.key before assuming it crashed.
const CERT_WAIT_MS = 2000;
const CERT_POLL_MS = 25;

export interface AuthorityFiles {
  readonly keyPem: string;
  readonly certPem: string;
}

export interface AuthorityCodec {
  create(): Promise<AuthorityFiles>;
  certificateFor(keyPem: string): Promise<string>;
  belongTogether(keyPem: string, certPem: string): Promise<boolean>;
}

export async function readAuthorityFiles(pkiDir: string): Promise<AuthorityFiles> {
  const keyPem = await readKey(pkiDir);
  if (keyPem === undefined) throw new Error(`edge CA: no ${KEY_FILE} in ${pkiDir}`);
  const certPem = await readOptional(path.join(pkiDir, CERT_FILE));
  if (certPem === undefined) throw new Error(`edge CA: no ${CERT_FILE} in ${pkiDir}`);
  return { keyPem, certPem };
}

export async function installAuthorityFiles(pkiDir: string, codec: AuthorityCodec): Promise<AuthorityFiles> {
  await mkdir(pkiDir, { recursive: true, mode: 0o700 });

  let keyPem = await readKey(pkiDir);
  if (keyPem === undefined) {
    const fresh = await codec.create();
    if (await installExclusive(pkiDir, KEY_FILE, fresh.keyPem, 0o600)) {
      // A ca.pem already there belongs to a key that is gone: the new key overrides it.
      await installReplacing(pkiDir, CERT_FILE, fresh.certPem, 0o644);
      return fresh;
    }
    keyPem = await readKey(pkiDir);
    if (keyPem === undefined) throw new Error(`edge CA: ${KEY_FILE} vanished while being created`);
  }

  const deadline = Date.now() + CERT_WAIT_MS;
  for (;;) {
    const certPem = await readOptional(path.join(pkiDir, CERT_FILE));
    if (certPem !== undefined && (await codec.belongTogether(keyPem, certPem))) return { keyPem, certPem };
    if (Date.now() >= deadline) break;
    await sleep(CERT_POLL_MS);
  }
  const certPem = await codec.certificateFor(keyPem);
  await installReplacing(pkiDir, CERT_FILE, certPem, 0o644);
  return { keyPem, certPem };
}

async function readKey(pkiDir: string): Promise<string | undefined> {
  const file = path.join(pkiDir, KEY_FILE);
  const keyPem = await readOptional(file);
  if (keyPem === undefined) return undefined;
  // Like ssh with a private key: refuse to use a CA key that others can read rather than carry on.
  const { mode } = await stat(file);
  if (process.platform !== 'win32' && (mode & 0o077) !== 0) {
    throw new Error(`edge CA: ${file} is accessible by group or others; chmod 600 it`);
  }
  return keyPem;
}

async function readOptional(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return undefined;
    throw error;
  }
}

/** Installs `name` only if it does not exist yet. Returns false when another writer got there first. */
async function installExclusive(dir: string, name: string, content: string, mode: number): Promise<boolean> {
  const temp = await writeTemp(dir, name, content, mode);
  try {
    await link(temp, path.join(dir, name));
    await syncDirectory(dir);
    return true;
  } catch (error) {
    if (isErrno(error, 'EEXIST')) return false;
    throw error;
  } finally {
    await unlink(temp).catch(() => undefined);
  }
}

async function installReplacing(dir: string, name: string, content: string, mode: number): Promise<void> {
  const temp = await writeTemp(dir, name, content, mode);
  try {
    await rename(temp, path.join(dir, name));
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  await syncDirectory(dir);
}

async function writeTemp(dir: string, name: string, content: string, mode: number): Promise<string> {
  const temp = path.join(dir, `.${name}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  // The mode is set at creation, so the key is never readable by others, not even for an instant.
  const handle = await open(temp, 'wx', mode);
  try {
    await handle.writeFile(content, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
  return temp;
}

async function syncDirectory(dir: string): Promise<void> {
  // Makes the new name durable; not every platform can fsync a directory, and that is not fatal.
  try {
    const handle = await open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    /* best effort */
  }
}

function isErrno(error: unknown, code: string): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === code;
}
