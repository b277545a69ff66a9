import { camelCased } from '../../infra/postgres/camel-cased.js';
import type { Pool } from '../../infra/postgres/pool.js';

export interface BindingRecord {
  readonly bindingId: string;
  readonly deviceId: string;
  readonly resourceType: string;
  readonly resourceId: string;
  readonly channelMapping: Readonly<Record<string, string>>;
  readonly createdAt: Date;
}

const BINDINGS_OF_PROJECT = `
  SELECT binding_id, device_id, resource_type, resource_id, channel_mapping, created_at FROM bindings
   WHERE project_id = $1
   ORDER BY created_at, binding_id`;

/** Every binding of one project, oldest first. */
export async function listBindings(pool: Pool, projectId: string): Promise<BindingRecord[]> {
  const { rows } = await pool.query<{
    binding_id: string;
    device_id: string;
    resource_type: string;
    resource_id: string;
    channel_mapping: Record<string, string>;
    created_at: Date;
  }>(BINDINGS_OF_PROJECT, [projectId]);
  return rows.map(camelCased);
}
