import type { ScopeName } from '../../domain/identity/scopes.js';

/**
 * Who is calling: an OAuth client of one project, with the scopes its access token carries. Every read and
 * write is scoped to `projectId`; nothing in a request body or query can widen it.
 */
export type Scope = ScopeName;

interface Principal {
  readonly projectId: string;
  readonly clientId: string;
  /** The token's scopes plus those they imply (grants:admin brings grants:revoke). */
  readonly scopes: ReadonlySet<Scope>;
  /** The access token's jti, for logs and audit metadata. */
  readonly tokenId: string;
  /** When the access token expires, in seconds since the epoch: a live stream ends then. */
  readonly expiresAt: number;
  /** The kid of the key that signed the token: a live stream ends when that key is revoked. */
  readonly keyId: string;
}

declare module 'express-serve-static-core' {
  interface Request {
    /** Set by the authenticate middleware; routes behind it may rely on it. */
    principal?: Principal;
  }
}
