import type { Actor } from '../../domain/events/actor.js';
import { camelCased } from '../../infra/postgres/camel-cased.js';
import type { Pool } from '../../infra/postgres/pool.js';

export interface GrantRow {
  readonly capability: string;
  readonly state: 'denied' | 'granted' | 'revoked';
  readonly changedBy: Actor | null;
  readonly changedAt: Date;
}

const GRANTS_OF_DEVICE = `
  SELECT capability, state, changed_by, changed_at FROM capability_grants
   WHERE project_id = $1 AND device_id = $2`;

/** The recorded grant rows of one device of the project (a pair with no row has no grant). */
export async function grantsOfDevice(pool: Pool, projectId: string, deviceId: string): Promise<GrantRow[]> {
  const { rows } = await pool.query<{
    capability: string;
    state: GrantRow['state'];
    changed_by: Actor | null;
    changed_at: Date;
  }>(GRANTS_OF_DEVICE, [projectId, deviceId]);
  return rows.map(camelCased);
}
