import type { Pool } from '../../infra/postgres/pool.js';

export interface SiteRecord {
  readonly siteId: string;
  readonly name: string;
  readonly timezone: string;
  readonly createdAt: Date;
}

const SITES_OF_PROJECT = `
  SELECT site_id, name, timezone, created_at FROM sites
   WHERE project_id = $1
   ORDER BY created_at, site_id`;

/** Every site of one project, oldest first. */
export async function listSites(pool: Pool, projectId: string): Promise<SiteRecord[]> {
  const { rows } = await pool.query<{ site_id: string; name: string; timezone: string; created_at: Date }>(
    SITES_OF_PROJECT,
    [projectId],
  );
  return rows.map((r) => ({
    siteId: r.site_id,
    name: r.name,
    timezone: r.timezone,
    createdAt: r.created_at,
  }));
}
