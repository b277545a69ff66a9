import { randomBytes } from 'node:crypto';
import { jwtVerify, SignJWT, type JWTHeaderParameters } from 'jose';
import { z } from 'zod';
import {
  canonicalScopes,
  clientIdSchema,
  parseScopeList,
  projectIdSchema,
  type ScopeName,
} from '../domain/identity/index.js';
import { ACCESS_TOKEN_ALGORITHM, ACCESS_TOKEN_LIFETIME_SECONDS, type SigningKeys } from './signing-keys.js';

/** Tokens are for this API only; another service of ours would get its own audience. */
const ACCESS_TOKEN_AUDIENCE = 'device-cloud-api';
/** RFC 9068: the header type of a JWT access token, which keeps other JWTs we might sign from passing. */
const ACCESS_TOKEN_TYPE = 'at+jwt';
// Tolerated clock skew between the server that issued a token and the one checking it.
const CLOCK_TOLERANCE_SECONDS = 5;
// Far longer than any token we issue; anything bigger is refused before any parsing.
const MAX_TOKEN_LENGTH = 4096;
/** Tokens whose signature was already checked, kept by this process (the oldest go first). */
const VERIFIED_TOKENS_KEPT = 10_000;

export interface AccessTokenSubject {
  readonly clientId: string;
  readonly projectId: string;
  readonly scopes: readonly ScopeName[];
}

export interface VerifiedAccessToken extends AccessTokenSubject {
  readonly tokenId: string;
  readonly expiresAt: number;
  /** The kid of the key that signed it: revoking that key ends what the token opened (a live stream). */
  readonly keyId: string;
}

const claimsSchema = z.object({
  sub: clientIdSchema,
  client_id: clientIdSchema,
  project_id: projectIdSchema,
  scope: z.string(),
  jti: z.string().min(1),
  exp: z.number(),
});

interface KeptVerification {
  readonly verified: VerifiedAccessToken;
}

export class AccessTokens {
  // An ES256 verification costs ~170 µs of CPU and a client sends the same token for its whole life.
  private readonly verifiedTokens = new Map<string, KeptVerification>();

  constructor(
    private readonly keys: SigningKeys,
    private readonly issuer: string,
    private readonly now: () => number = () => Date.now(),
  ) {}

  async issue(subject: AccessTokenSubject): Promise<{ token: string; expiresIn: number; scope: string }> {
    const { kid, key } = await this.keys.signingKey();
    const issuedAt = Math.floor(this.now() / 1000);
    const scope = canonicalScopes(subject.scopes).join(' ');
    const token = await new SignJWT({
      client_id: subject.clientId,
      project_id: subject.projectId,
      scope,
    })
      .setProtectedHeader({ alg: ACCESS_TOKEN_ALGORITHM, typ: ACCESS_TOKEN_TYPE, kid })
      .setIssuer(this.issuer)
      .setAudience(ACCESS_TOKEN_AUDIENCE)
      .setSubject(subject.clientId)
      .setIssuedAt(issuedAt)
      .setNotBefore(issuedAt)
      .setExpirationTime(issuedAt + ACCESS_TOKEN_LIFETIME_SECONDS)
      .setJti(randomBytes(16).toString('base64url'))
      .sign(key);
    return { token, expiresIn: ACCESS_TOKEN_LIFETIME_SECONDS, scope };
  }

  /**
   * The token's subject when it is one of ours and live; undefined for anything else. Algorithm, issuer,
   * audience and type are pinned, so `alg: none`, an HMAC token keyed with our public key, a token of
   * another issuer or an ID token signed by the same key all fail here.
   */
  async verify(token: string): Promise<VerifiedAccessToken | undefined> {
    if (token.length > MAX_TOKEN_LENGTH) return undefined;
    const kept = this.verifiedTokens.get(token);
    if (kept) {
      // The signature of these exact bytes was checked; what can change since is time and the key.
      const live = this.now() / 1000 < kept.verified.expiresAt + CLOCK_TOLERANCE_SECONDS;
      if (live && (await this.keys.verificationKey(kept.verified.keyId))) return kept.verified;
      this.verifiedTokens.delete(token);
    }
    // A key store that cannot be read is our fault, not the token's: it must not turn into a 401.
    let keyStoreFailure: unknown;
    let kid: string | undefined;
    try {
      const { payload } = await jwtVerify(
        token,
        async (header: JWTHeaderParameters) => {
          kid = header.kid;
          const key =
            header.kid === undefined
              ? undefined
              : await this.keys.verificationKey(header.kid).catch((error: unknown) => {
                  keyStoreFailure = error;
                  throw error;
                });
          if (!key) throw new Error('unknown signing key');
          return key;
        },
        {
          algorithms: [ACCESS_TOKEN_ALGORITHM],
          issuer: this.issuer,
          audience: ACCESS_TOKEN_AUDIENCE,
          typ: ACCESS_TOKEN_TYPE,
          requiredClaims: ['exp', 'iat', 'jti', 'sub', 'scope', 'client_id', 'project_id'],
          maxTokenAge: ACCESS_TOKEN_LIFETIME_SECONDS,
          clockTolerance: CLOCK_TOLERANCE_SECONDS,
          currentDate: new Date(this.now()),
        },
      );
      const claims = claimsSchema.safeParse(payload);
      if (!claims.success || claims.data.sub !== claims.data.client_id) return undefined;
      const { scopes, unknown } = parseScopeList(claims.data.scope);
      if (unknown.length > 0) return undefined;
      const verified = {
        clientId: claims.data.sub,
        projectId: claims.data.project_id,
        scopes,
        tokenId: claims.data.jti,
        expiresAt: claims.data.exp,
        keyId: kid!,
      };
      this.keep(token, { verified });
      return verified;
    } catch {
      if (keyStoreFailure !== undefined) throw keyStoreFailure;
      return undefined;
    }
  }

  private keep(token: string, verification: KeptVerification): void {
    this.verifiedTokens.set(token, verification);
    if (this.verifiedTokens.size > VERIFIED_TOKENS_KEPT) {
      this.verifiedTokens.delete(this.verifiedTokens.keys().next().value!);
    }
  }
}
