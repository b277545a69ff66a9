import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * A secret at rest under an operator's encryption key (32 bytes, base64, from the environment): AES-256-GCM,
 * so a copy of the database alone neither reads nor alters it unseen. Used for private signing keys.
 */
export interface SealedSecret {
  readonly alg: 'A256GCM';
  readonly iv: string;
  readonly tag: string;
  readonly ciphertext: string;
}

/** `variable` names the setting the key came from, for the error a wrong key gives. */
export function seal(plain: string, encryptionKey: string, variable: string): SealedSecret {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyBytes(encryptionKey, variable), iv);
  const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return {
    alg: 'A256GCM',
    iv: iv.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
    ciphertext: ciphertext.toString('base64'),
  };
}

export function isSealed(stored: unknown): stored is SealedSecret {
  return typeof stored === 'object' && stored !== null && 'ciphertext' in stored;
}

export function unseal(sealed: SealedSecret, encryptionKey: string | undefined, variable: string): string {
  if (!encryptionKey) throw new Error(`the key is stored encrypted: set ${variable}`);
  const decipher = createDecipheriv(
    'aes-256-gcm',
    keyBytes(encryptionKey, variable),
    Buffer.from(sealed.iv, 'base64'),
  );
  decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
  try {
    return Buffer.concat([
      decipher.update(Buffer.from(sealed.ciphertext, 'base64')),
      decipher.final(),
    ]).toString('utf8');
  } catch (error) {
    // GCM's own message ("unable to authenticate data") names neither the cause nor the setting to check.
    throw new Error(
      `the stored key does not open with ${variable}: a wrong key, or the stored key was altered`,
      {
        cause: error,
      },
    );
  }
}

function keyBytes(encoded: string, variable: string): Buffer {
  const key = Buffer.from(encoded, 'base64');
  if (key.length !== 32) throw new Error(`${variable} must be 32 bytes, base64-encoded`);
  return key;
}
