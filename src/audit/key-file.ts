import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import type { AuditPublicKey } from './signing-keys.js';

/**
 * The audit keys an auditor records outside the system (`devcloud audit keys export`) and verifies with
 * (`--trusted-keys FILE`), so that a key planted in the database is refused. A JSON object:
 * `{"format":"devcloud-audit-keys/1","keys":[{keyId, algorithm, publicKey (SPKI PEM), createdAt, retiredAt}]}`.
 */
const KEY_FILE_FORMAT = 'devcloud-audit-keys/1';

const keyFile = z.object({
  format: z.literal(KEY_FILE_FORMAT),
  keys: z.array(
    z.object({
      keyId: z.string(),
      algorithm: z.literal('Ed25519'),
      publicKey: z.string(),
      createdAt: z.string(),
      retiredAt: z.string().nullable(),
    }),
  ),
});

export function keyFileText(keys: readonly AuditPublicKey[]): string {
  return JSON.stringify({ format: KEY_FILE_FORMAT, keys }, null, 2) + '\n';
}

/** The keys of a key file; a file of another shape is refused with what is wrong in it. */
export async function readKeyFile(path: string): Promise<AuditPublicKey[]> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new Error(`${path}: not a JSON key file (${(error as Error).message})`, { cause: error });
  }
  const file = keyFile.safeParse(parsed);
  if (!file.success) {
    throw new Error(
      `${path}: not a ${KEY_FILE_FORMAT} key file: ${file.error.issues[0]?.message ?? 'invalid'}`,
    );
  }
  return file.data.keys;
}
