import { readFileSync } from 'node:fs';
import type { SiteEvent } from '../../domain/sites/index.js';
import type { Projector } from '../projector.js';

const schemaSql = readFileSync(new URL('./schema.sql', import.meta.url), 'utf8');

// A site is written once; replaying its event finds the row and leaves it.
const INSERT_SITES = `
  INSERT INTO sites (site_id, project_id, name, timezone, created_at)
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[])
  ON CONFLICT (site_id) DO NOTHING`;

export function sitesProjector(): Projector {
  return {
    name: 'sites',
    version: 1,
    eventTypes: ['SiteCreated'],
    tables: ['sites'],
    schemaSql,
    async apply(events, db) {
      const created = events.filter((e) => e.type === 'SiteCreated');
      if (created.length === 0) return;
      const data = created.map((e) => e.data as SiteEvent['data']);
      await db.query(INSERT_SITES, [
        data.map((d) => d.siteId),
        data.map((d) => d.projectId),
        data.map((d) => d.name),
        data.map((d) => d.timezone),
        created.map((e) => e.recordedAt.toISOString()),
      ]);
    },
  };
}
