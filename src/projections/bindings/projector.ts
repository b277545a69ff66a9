import { readFileSync } from 'node:fs';
import type { BindingEvent } from '../../domain/bindings/index.js';
import type { Projector } from '../projector.js';

const schemaSql = readFileSync(new URL('./schema.sql', import.meta.url), 'utf8');

// A binding is written once; replaying its event finds the row and leaves it.
const INSERT_BINDINGS = `
  INSERT INTO bindings (binding_id, project_id, device_id, resource_type, resource_id, channel_mapping, created_at)
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::jsonb[], $7::timestamptz[])
  ON CONFLICT (binding_id) DO NOTHING`;

export function bindingsProjector(): Projector {
  return {
    name: 'bindings',
    version: 1,
    eventTypes: ['BindingCreated'],
    tables: ['bindings'],
    schemaSql,
    async apply(events, db) {
      const data = events
        .filter((e) => e.type === 'BindingCreated')
        .map((e) => e.data as BindingEvent['data']);
      if (data.length === 0) return;
      await db.query(INSERT_BINDINGS, [
        data.map((d) => d.bindingId),
        data.map((d) => d.projectId),
        data.map((d) => d.deviceId),
        data.map((d) => d.resourceType),
        data.map((d) => d.resourceId),
        data.map((d) => JSON.stringify(d.channelMapping)),
        data.map((d) => d.createdAt),
      ]);
    },
  };
}
