import {
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  importJWK,
  type CryptoKey,
  type JWK,
} from 'jose';
import { inTransaction, type Pool } from '../infra/postgres/pool.js';
import { isSealed, seal, unseal, type SealedSecret } from '../infra/sealed-secret.js';

export const ACCESS_TOKEN_ALGORITHM = 'ES256';
export const ACCESS_TOKEN_LIFETIME_SECONDS = 3600;
/**
 * A retired key verifies for one token lifetime after it stopped signing, plus a margin that covers
 * servers still signing with it until their key cache refreshes, and clock skew.
 */
const RETIRED_KEY_GRACE_SECONDS = ACCESS_TOKEN_LIFETIME_SECONDS + 300;

const SELECT_KEYS = `
  SELECT kid, public_jwk, CASE WHEN retired_at IS NULL THEN private_jwk END AS private_jwk
    FROM auth.signing_keys
   WHERE revoked_at IS NULL AND (retired_at IS NULL OR retired_at > now() - make_interval(secs => $1))`;

// Two servers using the service for the first time race here; the one-active-key index lets one insert win.
const INSERT_FIRST_KEY = `
  INSERT INTO auth.signing_keys (kid, algorithm, private_jwk, public_jwk) VALUES ($1, $2, $3, $4)
  ON CONFLICT DO NOTHING`;

const ROTATION_LOCK = `SELECT pg_advisory_xact_lock(hashtext('auth.signing_keys rotation'))`;
// A retired key only verifies: its private part is dropped with the retirement.
const RETIRE_ACTIVE = `
  UPDATE auth.signing_keys SET retired_at = now(), private_jwk = NULL WHERE retired_at IS NULL RETURNING kid`;
const REVOKE_KEY = `
  UPDATE auth.signing_keys
     SET revoked_at = coalesce(revoked_at, now()), retired_at = coalesce(retired_at, now()), private_jwk = NULL
   WHERE kid = $1 RETURNING kid`;
const INSERT_KEY = `INSERT INTO auth.signing_keys (kid, algorithm, private_jwk, public_jwk) VALUES ($1, $2, $3, $4)`;
const PRUNE_EXPIRED = `
  DELETE FROM auth.signing_keys WHERE retired_at < now() - make_interval(secs => $1) RETURNING kid`;

interface NewKey {
  readonly kid: string;
  readonly privateJwk: JWK;
  readonly publicJwk: JWK;
}

async function newKey(): Promise<NewKey> {
  const pair = await generateKeyPair(ACCESS_TOKEN_ALGORITHM, { extractable: true });
  const publicJwk = await exportJWK(pair.publicKey);
  const privateJwk = await exportJWK(pair.privateKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  return { kid, privateJwk: { ...privateJwk, kid }, publicJwk: { ...publicJwk, kid } };
}

const keyRow = (key: NewKey, encryptionKey: string | undefined) => [
  key.kid,
  ACCESS_TOKEN_ALGORITHM,
  JSON.stringify(encryptionKey ? sealPrivateKey(key.privateJwk, encryptionKey) : key.privateJwk),
  JSON.stringify(key.publicJwk),
];

/**
 * Private keys at rest: AES-256-GCM under SIGNING_KEY_ENCRYPTION_KEY (32 bytes, base64) when it is set, so a
 * copy of the database alone cannot sign tokens. Unset (the embedded default), they are stored as JWKs:
 * whoever reads the database can then sign, which is the documented trade-off (docs/api.md).
 */
const ENCRYPTION_KEY_VARIABLE = 'SIGNING_KEY_ENCRYPTION_KEY';

function sealPrivateKey(jwk: JWK, encryptionKey: string): SealedSecret {
  return seal(JSON.stringify(jwk), encryptionKey, ENCRYPTION_KEY_VARIABLE);
}

function openPrivateKey(stored: JWK | SealedSecret, encryptionKey: string | undefined): JWK {
  if (!isSealed(stored)) return stored;
  return JSON.parse(unseal(stored, encryptionKey, ENCRYPTION_KEY_VARIABLE)) as JWK;
}

export interface Rotation {
  readonly kid: string;
  readonly retired: string[];
  readonly pruned: string[];
}

/**
 * A new key signs from now on; the one it replaces keeps verifying for RETIRED_KEY_GRACE_SECONDS, and keys
 * retired longer ago than that are deleted. Running servers pick the new key up on their next refresh.
 */
export async function rotateSigningKeys(pool: Pool, encryptionKey?: string): Promise<Rotation> {
  const key = await newKey();
  return inTransaction(pool, async (db) => {
    await db.query(ROTATION_LOCK);
    const retired = (await db.query<{ kid: string }>(RETIRE_ACTIVE)).rows.map((r) => r.kid);
    await db.query(INSERT_KEY, keyRow(key, encryptionKey));
    const pruned = (await db.query<{ kid: string }>(PRUNE_EXPIRED, [RETIRED_KEY_GRACE_SECONDS])).rows.map(
      (r) => r.kid,
    );
    return { kid: key.kid, retired, pruned };
  });
}

/**
 * Emergency revoke (a leaked key): the key stops verifying everywhere within the servers' key-cache refresh
 * (10 s), so every token it signed is refused from then on; if it was the signing key, the next token request
 * creates a new one. Revoking an unknown kid changes nothing.
 */
export async function revokeSigningKey(pool: Pool, kid: string): Promise<{ kid: string; revoked: boolean }> {
  const { rowCount } = await pool.query(REVOKE_KEY, [kid]);
  return { kid, revoked: (rowCount ?? 0) > 0 };
}

interface KeyRing {
  readonly loadedAt: number;
  readonly signing: { readonly kid: string; readonly key: CryptoKey } | undefined;
  readonly verifying: ReadonlyMap<string, CryptoKey>;
}

/**
 * The signing keys as this process sees them, cached for `refreshMs` so a rotation made elsewhere (the CLI,
 * another server) is picked up within that time. A token naming a kid we have not seen forces an early
 * refresh, at most once per `refreshMs / 10`, so tokens from a server that rotated first verify here too.
 */
export class SigningKeys {
  private ring: KeyRing | undefined;
  private loading: Promise<KeyRing> | undefined;
  private lastForcedRefresh = -Infinity;

  constructor(
    private readonly pool: Pool,
    private readonly options: { refreshMs?: number; now?: () => number; encryptionKey?: string } = {},
  ) {}

  private now(): number {
    return this.options.now?.() ?? Date.now();
  }

  private get refreshMs(): number {
    return this.options.refreshMs ?? 10_000;
  }

  /** The key that signs now, created on first use. */
  async signingKey(): Promise<{ kid: string; key: CryptoKey }> {
    let ring = await this.current();
    if (!ring.signing) {
      const key = await newKey();
      await this.pool.query(INSERT_FIRST_KEY, keyRow(key, this.options.encryptionKey));
      // Not reload(): a load already in flight may have started before the insert.
      ring = await this.load();
    }
    if (!ring.signing) throw new Error('no signing key after creating one');
    return ring.signing;
  }

  /** The public key for a kid, or undefined when no live key has that kid. */
  async verificationKey(kid: string): Promise<CryptoKey | undefined> {
    const ring = await this.current();
    const key = ring.verifying.get(kid);
    if (key || this.now() - this.lastForcedRefresh < this.refreshMs / 10) return key;
    this.lastForcedRefresh = this.now();
    return (await this.reload()).verifying.get(kid);
  }

  /**
   * Whether tokens of `kid` still verify, as of the cached ring (at most `refreshMs` old): what a long-lived
   * use of a token (a live stream) checks again and again, so an unknown kid forces no reload here.
   */
  async verifies(kid: string): Promise<boolean> {
    return (await this.current()).verifying.has(kid);
  }

  private async current(): Promise<KeyRing> {
    const ring = this.ring;
    const age = ring ? this.now() - ring.loadedAt : Infinity;
    // A clock that went backwards makes the cache stale too, rather than fresh for ever.
    if (ring && age >= 0 && age < this.refreshMs) return ring;
    return this.reload();
  }

  private reload(): Promise<KeyRing> {
    this.loading ??= this.load().finally(() => {
      this.loading = undefined;
    });
    return this.loading;
  }

  private async load(): Promise<KeyRing> {
    const { rows } = await this.pool.query<{
      kid: string;
      public_jwk: JWK;
      private_jwk: JWK | SealedSecret | null;
    }>(SELECT_KEYS, [RETIRED_KEY_GRACE_SECONDS]);
    const verifying = new Map<string, CryptoKey>();
    let signing: KeyRing['signing'];
    for (const row of rows) {
      verifying.set(row.kid, (await importJWK(row.public_jwk, ACCESS_TOKEN_ALGORITHM)) as CryptoKey);
      if (row.private_jwk) {
        signing = {
          kid: row.kid,
          key: (await importJWK(
            openPrivateKey(row.private_jwk, this.options.encryptionKey),
            ACCESS_TOKEN_ALGORITHM,
          )) as CryptoKey,
        };
      }
    }
    this.ring = { loadedAt: this.now(), signing, verifying };
    return this.ring;
  }
}
