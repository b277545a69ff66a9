import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  sign,
  verify,
  type KeyObject,
} from 'node:crypto';
import type { CheckSignature } from '../domain/audit/verification.js';
import { inTransaction, type Pool } from '../infra/postgres/pool.js';
import { isSealed, seal, unseal, type SealedSecret } from '../infra/sealed-secret.js';

/**
 * The audit signing keys (docs/audit.md, "Keys"): Ed25519, one active at a time, rotated by
 * `devcloud audit keys rotate`. A retired key loses its private part and keeps its public part for ever.
 * With AUDIT_SIGNING_KEY_ENCRYPTION_KEY set, private keys are stored sealed under it, so whoever holds only
 * the database can neither sign a checkpoint nor plant a key of their own that verification accepts.
 */
const AUDIT_KEY_ENCRYPTION_VARIABLE = 'AUDIT_SIGNING_KEY_ENCRYPTION_KEY';

export interface AuditPublicKey {
  readonly keyId: string;
  readonly algorithm: 'Ed25519';
  /** SPKI, PEM. */
  readonly publicKey: string;
  readonly createdAt: string;
  readonly retiredAt: string | null;
}

export interface AuditSigner {
  readonly keyId: string;
  sign(payload: string): string;
}

const SELECT_ACTIVE = `SELECT key_id, private_key FROM audit.signing_keys WHERE retired_at IS NULL`;
const INSERT_FIRST = `
  INSERT INTO audit.signing_keys (key_id, algorithm, public_key, private_key) VALUES ($1, 'Ed25519', $2, $3)
  ON CONFLICT DO NOTHING`;
const ROTATION_LOCK = `SELECT pg_advisory_xact_lock(hashtext('audit.signing_keys rotation'))`;
const RETIRE_ACTIVE = `
  UPDATE audit.signing_keys SET retired_at = now(), private_key = NULL WHERE retired_at IS NULL RETURNING key_id`;
const INSERT_KEY = `
  INSERT INTO audit.signing_keys (key_id, algorithm, public_key, private_key) VALUES ($1, 'Ed25519', $2, $3)`;
const SELECT_PUBLIC = `
  SELECT key_id, public_key, created_at, retired_at FROM audit.signing_keys ORDER BY created_at, key_id`;

interface NewKey {
  readonly keyId: string;
  readonly publicKey: string;
  readonly privateKey: string;
}

/** A key's fingerprint: the SHA-256 of its public key (SPKI, DER), in hex. */
export function auditKeyFingerprint(publicKey: KeyObject): string {
  return createHash('sha256')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest('hex');
}

/** A key's id: the first 32 hex digits of its fingerprint. */
export function auditKeyId(publicKey: KeyObject): string {
  return auditKeyFingerprint(publicKey).slice(0, 32);
}

function newKey(): NewKey {
  const pair = generateKeyPairSync('ed25519');
  return {
    keyId: auditKeyId(pair.publicKey),
    publicKey: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    privateKey: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

function storedPrivateKey(key: NewKey, encryptionKey: string | undefined): string {
  return JSON.stringify(
    encryptionKey ? seal(key.privateKey, encryptionKey, AUDIT_KEY_ENCRYPTION_VARIABLE) : key.privateKey,
  );
}

function signerOf(
  keyId: string,
  stored: string | SealedSecret,
  encryptionKey: string | undefined,
): AuditSigner {
  const pem = isSealed(stored) ? unseal(stored, encryptionKey, AUDIT_KEY_ENCRYPTION_VARIABLE) : stored;
  const privateKey = createPrivateKey(pem);
  if (auditKeyId(createPublicKey(privateKey)) !== keyId) {
    throw new Error(`audit signing key ${keyId}: its private part does not belong to it`);
  }
  return {
    keyId,
    sign: (payload) => sign(null, Buffer.from(payload, 'utf8'), privateKey).toString('base64url'),
  };
}

/** The active signing key, made on first use (two schedulers racing here make one key). */
export async function activeAuditSigner(pool: Pool, encryptionKey?: string): Promise<AuditSigner> {
  for (let attempt = 0; attempt < 2; attempt++) {
    const { rows } = await pool.query<{ key_id: string; private_key: string | SealedSecret }>(SELECT_ACTIVE);
    const row = rows[0];
    if (row) return signerOf(row.key_id, row.private_key, encryptionKey);
    const key = newKey();
    await pool.query(INSERT_FIRST, [key.keyId, key.publicKey, storedPrivateKey(key, encryptionKey)]);
  }
  throw new Error('no active audit signing key after making one');
}

/** Retires the active key (its private part is dropped) and makes a new one, in one transaction. */
export async function rotateAuditKeys(
  pool: Pool,
  encryptionKey?: string,
): Promise<{ keyId: string; retired: string[] }> {
  const key = newKey();
  return inTransaction(pool, async (db) => {
    await db.query(ROTATION_LOCK);
    const retired = await db.query<{ key_id: string }>(RETIRE_ACTIVE);
    await db.query(INSERT_KEY, [key.keyId, key.publicKey, storedPrivateKey(key, encryptionKey)]);
    return { keyId: key.keyId, retired: retired.rows.map((r) => r.key_id) };
  });
}

/** Every audit key's public part, retired ones included. */
export async function auditPublicKeys(pool: Pool): Promise<AuditPublicKey[]> {
  const { rows } = await pool.query<{
    key_id: string;
    public_key: string;
    created_at: Date;
    retired_at: Date | null;
  }>(SELECT_PUBLIC);
  return rows.map((r) => ({
    keyId: r.key_id,
    algorithm: 'Ed25519',
    publicKey: r.public_key,
    createdAt: r.created_at.toISOString(),
    retiredAt: r.retired_at?.toISOString() ?? null,
  }));
}

/** An Ed25519 public key from its PEM; undefined for anything else (a planted row proves nothing). */
function publicKeyOf(pem: string): KeyObject | undefined {
  try {
    const key = createPublicKey(pem);
    return key.asymmetricKeyType === 'ed25519' ? key : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The signature check verification runs with: a key is trusted when it is among `keys` and its id is the
 * fingerprint of its public part (a planted row with a borrowed id is refused).
 */
export function signatureCheck(keys: readonly Pick<AuditPublicKey, 'keyId' | 'publicKey'>[]): CheckSignature {
  const byId = new Map<string, KeyObject>();
  for (const key of keys) {
    const publicKey = publicKeyOf(key.publicKey);
    if (publicKey && auditKeyId(publicKey) === key.keyId) byId.set(key.keyId, publicKey);
  }
  return (keyId, payload, signature) => {
    const publicKey = byId.get(keyId);
    if (!publicKey) return 'unknown_key';
    const bytes = Buffer.from(signature, 'base64url');
    // The decoder skips stray characters and a last digit's unused bits: only the one text that encodes
    // these bytes is the signature, so no changed character of it still verifies.
    if (bytes.toString('base64url') !== signature) return 'invalid';
    return verify(null, Buffer.from(payload, 'utf8'), publicKey, bytes) ? 'valid' : 'invalid';
  };
}
