import { readFileSync } from 'node:fs';
import type { GrantEvent } from '../../domain/control/grant-events.js';
import type { Projector } from '../projector.js';

const schemaSql = readFileSync(new URL('./schema.sql', import.meta.url), 'utf8');

// The latest change per pair wins; a replayed or older event (lower revision) leaves the row as it is.
const UPSERT_GRANTS = `
  INSERT INTO capability_grants (device_id, capability, project_id, state, changed_by, changed_at, revision)
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::timestamptz[], $7::bigint[])
  ON CONFLICT (device_id, capability) DO UPDATE
     SET state = excluded.state, changed_by = excluded.changed_by, changed_at = excluded.changed_at,
         revision = excluded.revision
   WHERE capability_grants.revision < excluded.revision`;

const STATE_OF = {
  CapabilityWriteDenied: 'denied',
  CapabilityWriteGranted: 'granted',
  CapabilityWriteRevoked: 'revoked',
} as const;

interface Row {
  deviceId: string;
  capability: string;
  projectId: string;
  state: string;
  by: string | null;
  at: string;
  revision: string;
}

export function grantsProjector(): Projector {
  return {
    name: 'grants',
    version: 1,
    eventTypes: Object.keys(STATE_OF),
    tables: ['capability_grants'],
    schemaSql,
    async apply(events, db) {
      // One row per pair and batch (the last change in it), since one upsert may not touch a row twice.
      const rows = new Map<string, Row>();
      for (const event of events) {
        const e = { type: event.type, data: event.data } as GrantEvent;
        if (!(e.type in STATE_OF)) continue;
        const by = 'by' in e.data ? JSON.stringify(e.data.by) : null;
        const at = 'at' in e.data ? e.data.at : event.recordedAt.toISOString();
        rows.set(`${e.data.deviceId}\u0000${e.data.capability}`, {
          deviceId: e.data.deviceId,
          capability: e.data.capability,
          projectId: e.data.projectId,
          state: STATE_OF[e.type],
          by,
          at,
          revision: String(event.revision),
        });
      }
      if (rows.size === 0) return;
      const all = [...rows.values()];
      await db.query(UPSERT_GRANTS, [
        all.map((r) => r.deviceId),
        all.map((r) => r.capability),
        all.map((r) => r.projectId),
        all.map((r) => r.state),
        all.map((r) => r.by),
        all.map((r) => r.at),
        all.map((r) => r.revision),
      ]);
    },
  };
}
