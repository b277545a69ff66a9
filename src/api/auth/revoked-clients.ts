import type { Pool } from '../../infra/postgres/pool.js';
import { ACCESS_TOKEN_LIFETIME_SECONDS } from '../../identity/signing-keys.js';
import { recentlyRevokedClientIds } from '../../projections/identity/queries.js';

/** How stale the revocation list may be: a revoked client's live tokens stop within this plus projection lag. */
export const REVOKED_CLIENTS_TTL_MS = 5000;
// Revocation time is the event's, on the database clock; the margin covers skew against token timestamps.
const LOOKBACK_SECONDS = ACCESS_TOKEN_LIFETIME_SECONDS + 300;

/**
 * The clients revoked recently enough that tokens of theirs may still be unexpired, read from the identity
 * read model and cached for a few seconds, so checking a bearer token costs no query per request.
 */
export class RevokedClients {
  private ids: ReadonlySet<string> = new Set();
  private loadedAt = -Infinity;
  private loading: Promise<void> | undefined;

  constructor(
    private readonly pool: Pool,
    private readonly options: { ttlMs?: number; now?: () => number } = {},
  ) {}

  async has(clientId: string): Promise<boolean> {
    const now = this.options.now?.() ?? Date.now();
    const age = now - this.loadedAt;
    // A clock that went backwards makes the cache stale too, rather than fresh for ever.
    if (age < 0 || age >= (this.options.ttlMs ?? REVOKED_CLIENTS_TTL_MS)) await this.refresh(now);
    return this.ids.has(clientId);
  }

  private refresh(now: number): Promise<void> {
    this.loading ??= recentlyRevokedClientIds(this.pool, LOOKBACK_SECONDS)
      .then((ids) => {
        this.ids = new Set(ids);
        this.loadedAt = now;
      })
      .finally(() => {
        this.loading = undefined;
      });
    return this.loading;
  }
}
