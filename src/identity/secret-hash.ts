import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * Client secrets are stored only as scrypt hashes in PHC string form, `$scrypt$ln=15,r=8,p=1$salt$hash`,
 * so the cost can be raised later without breaking older hashes: verification reads the parameters back.
 * N = 2^15, r = 8 costs ~32 MiB and ~70 ms per check on our 2-core machines.
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

let decoy: Promise<string> | undefined;

/**
 * Runs a full verification against a hash no secret matches, so a request naming an unknown or revoked
 * client costs the same time as one naming a real client: response time tells nothing about client ids.
 */
export async function verifyAgainstDecoy(secret: string): Promise<false> {
  await verifySecret(secret, await prepareDecoy());
  return false;
}

/** Computes the decoy ahead of the first request that needs it, so that one is not slower than the rest. */
export function prepareDecoy(): Promise<string> {
  decoy ??= hashSecret(randomBytes(32).toString('base64'));
  return decoy;
}
