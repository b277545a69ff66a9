import type { Pool } from '../../infra/postgres/pool.js';

export interface ClientListing {
  readonly clientId: string;
  readonly name: string | null;
  readonly scopes: string[];
  readonly authMethod: string;
  readonly createdAt: string;
  readonly revokedAt: string | null;
}

const LIST_CLIENTS = `
  SELECT client_id, name, scopes, auth_method, created_at, revoked_at
    FROM oauth_clients WHERE project_id = $1 ORDER BY created_at, client_id`;

export async function listClients(pool: Pool, projectId: string): Promise<ClientListing[]> {
  const { rows } = await pool.query<{
    client_id: string;
    name: string | null;
    scopes: string[];
    auth_method: string;
    created_at: Date;
    revoked_at: Date | null;
  }>(LIST_CLIENTS, [projectId]);
  return rows.map((r) => ({
    clientId: r.client_id,
    name: r.name,
    scopes: r.scopes,
    authMethod: r.auth_method,
    createdAt: r.created_at.toISOString(),
    revokedAt: r.revoked_at?.toISOString() ?? null,
  }));
}

// Only revocations young enough to matter: a token issued before a revocation expires within one token
// lifetime of it, and none is issued after it (the token endpoint reads the client's stream).
const RECENTLY_REVOKED = `
  SELECT client_id FROM oauth_clients WHERE revoked_at > now() - make_interval(secs => $1)`;

/** Ids of clients revoked within the last `withinSeconds`; empty while the read model is not installed yet. */
export async function recentlyRevokedClientIds(pool: Pool, withinSeconds: number): Promise<string[]> {
  try {
    const { rows } = await pool.query<{ client_id: string }>(RECENTLY_REVOKED, [withinSeconds]);
    return rows.map((r) => r.client_id);
  } catch (error) {
    if ((error as { code?: string }).code === '42P01') return [];
    throw error;
  }
}
