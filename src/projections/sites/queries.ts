import { camelCased } from '../../infra/postgres/camel-cased.js';
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
  return rows.map(camelCased);
}

const ONE_SITE =
  'SELECT site_id, name, timezone, created_at FROM sites WHERE project_id = $1 AND site_id = $2';

/** One site of the project, or undefined. */
export async function findSite(
  pool: Pool,
  projectId: string,
  siteId: string,
): Promise<SiteRecord | undefined> {
  const { rows } = await pool.query<{ site_id: string; name: string; timezone: string; created_at: Date }>(
    ONE_SITE,
    [projectId, siteId],
  );
  const r = rows[0];
  return r && { siteId: r.site_id, name: r.name, timezone: r.timezone, createdAt: r.created_at };
}
