import { createHmac, randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import type { Pool } from '../infra/postgres/pool.js';

/**
 * Clients created before keyed hashes (ClientSecretHasher below) have their secret stored as scrypt in PHC
 * string form, `$scrypt$ln=15,r=8,p=1$salt$hash`; verification reads the parameters back. N = 2^15, r = 8
 * costs ~32 MiB and ~70 ms per check on our 2-core machines, which is why such hashes are migrated.
 */
const DEFAULT = { ln: 15, r: 8, p: 1 };
const KEY_LENGTH = 32;
const SALT_BYTES = 16;
// Refuse absurd parameters read from a stored hash rather than let them exhaust memory.
const MAX = { ln: 20, r: 16, p: 4 };

const PHC = /^\$scrypt\$ln=(\d+),r=(\d+),p=(\d+)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/;

function derive(secret: string, salt: Buffer, params: typeof DEFAULT): Promise<Buffer> {
  const options: ScryptOptions = {
    N: 2 ** params.ln,
    r: params.r,
    p: params.p,
    maxmem: 256 * 2 ** params.ln * params.r,
  };
  return new Promise((resolve, reject) =>
    scrypt(secret.normalize('NFC'), salt, KEY_LENGTH, options, (error, key) =>
      error ? reject(error) : resolve(key),
    ),
  );
}

const b64 = (buffer: Buffer) => buffer.toString('base64').replace(/=+$/, '');

/** A scrypt hash as clients created before keyed hashes have (tests make such clients with it). */
export async function hashSecret(secret: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(secret, salt, DEFAULT);
  return `$scrypt$ln=${DEFAULT.ln},r=${DEFAULT.r},p=${DEFAULT.p}$${b64(salt)}$${b64(key)}`;
}

/** Constant-time comparison; a malformed stored hash verifies nothing. */
export async function verifySecret(secret: string, stored: string): Promise<boolean> {
  const match = PHC.exec(stored);
  if (!match) return false;
  const params = { ln: Number(match[1]), r: Number(match[2]), p: Number(match[3]) };
  if (params.ln > MAX.ln || params.r > MAX.r || params.p > MAX.p || params.ln < 1) return false;
  const expected = Buffer.from(match[5]!, 'base64');
  const actual = await derive(secret, Buffer.from(match[4]!, 'base64'), params);
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

/** True for a hash recorded before keyed hashes: costly to check, migrated on the next successful check. */
export const isScryptHash = (stored: string) => stored.startsWith('$scrypt$');

const KEY_ID = 'k1';
const KEY_BYTES = 32;
const HMAC = /^\$hmac-sha256\$k=([A-Za-z0-9_-]{1,32})\$([A-Za-z0-9+/]+)$/;
// Two servers using the service for the first time race here; the primary key lets one insert win.
const INSERT_KEY = `INSERT INTO auth.client_secret_keys (key_id, key) VALUES ($1, $2) ON CONFLICT DO NOTHING`;
const SELECT_KEYS = `SELECT key_id, key FROM auth.client_secret_keys`;

/**
 * Client secrets are 256 random bits, so a slow password hash buys nothing against guessing and costs ~100 ms
 * of CPU per failed token request, which anyone can send. They are recorded as HMAC-SHA-256 under a key
 * kept in the database (auth.client_secret_keys, shared by every instance, never in the event store): a
 * check costs microseconds, and the hashes in the events cannot be checked against a guess without the key.
 */
export class ClientSecretHasher {
  private keys: Promise<ReadonlyMap<string, Buffer>> | undefined;

  constructor(private readonly pool: Pool) {}

  async hash(secret: string): Promise<string> {
    const key = (await this.loadKeys()).get(KEY_ID)!;
    return `$hmac-sha256$k=${KEY_ID}$${b64(mac(key, secret))}`;
  }

  /** Constant-time; a hash naming an unknown key, or no keyed hash at all, verifies nothing. */
  async verify(secret: string, stored: string): Promise<boolean> {
    const match = HMAC.exec(stored);
    const key = match ? (await this.loadKeys()).get(match[1]!) : undefined;
    if (!match || !key) return false;
    const expected = Buffer.from(match[2]!, 'base64');
    const actual = mac(key, secret);
    return expected.length === actual.length && timingSafeEqual(expected, actual);
  }

  /** The same work as a real check, for a client that does not exist: the answer's timing says nothing. */
  async verifyDecoy(secret: string): Promise<false> {
    mac((await this.loadKeys()).get(KEY_ID)!, secret);
    return false;
  }

  private loadKeys(): Promise<ReadonlyMap<string, Buffer>> {
    this.keys ??= (async () => {
      await this.pool.query(INSERT_KEY, [KEY_ID, randomBytes(KEY_BYTES)]);
      const { rows } = await this.pool.query<{ key_id: string; key: Buffer }>(SELECT_KEYS);
      return new Map(rows.map((r) => [r.key_id, r.key]));
    })();
    // A database that is down now must not leave the failure cached for ever.
    this.keys.catch(() => (this.keys = undefined));
    return this.keys;
  }
}

const mac = (key: Buffer, secret: string) =>
  createHmac('sha256', key).update(secret.normalize('NFC')).digest();
