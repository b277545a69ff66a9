import { readFileSync } from 'node:fs';
import type { DeviceEvent } from '../../domain/devices/index.js';
import type { RecordedEvent } from '../../eventstore/port.js';
import { arrayLiteral } from '../../infra/postgres/array-literal.js';
import { bind, prepared } from '../../infra/postgres/prepared.js';
import type { Projector } from '../projector.js';

const schemaSql = readFileSync(new URL('./schema.sql', import.meta.url), 'utf8');
const queryIndexSql = readFileSync(new URL('./query-indexes.sql', import.meta.url), 'utf8');

/**
 * Numbers new devices after the highest seq so far, in batch order. Writers of this table are serialised
 * by the checkpoint lock, so max(seq) cannot move under the statement; devices already present (a replayed
 * batch) take no number, which keeps the sequence gap-free and the same on every rebuild.
 */
const INSERT_REGISTERED = prepared(
  'devices.insert-registered',
  `
  INSERT INTO devices (seq, device_id, project_id, site_id, parent_hub_id, kind, manufacturer, product_model,
                       capabilities, profile, status, created_at, revision)
  SELECT (SELECT coalesce(max(seq), 0) FROM devices) + row_number() OVER (ORDER BY n.ord),
         n.device_id, n.project_id, n.site_id, n.parent_hub_id, n.kind, n.manufacturer, n.product_model,
         n.capabilities::text[], n.profile, 'active', n.created_at, n.revision
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                $8::text[], $9::text[], $10::timestamptz[], $11::int8[])
         WITH ORDINALITY AS n(device_id, project_id, site_id, parent_hub_id, kind, manufacturer, product_model,
                              capabilities, profile, created_at, revision, ord)
   WHERE NOT EXISTS (SELECT 1 FROM devices d WHERE d.device_id = n.device_id)
   ORDER BY n.ord`,
);

/** Null leaves a column as it is; a row only moves forward in its stream. */
const UPDATE_CHANGED = prepared(
  'devices.update-changed',
  `
  UPDATE devices d
     SET status = coalesce(n.status, d.status),
         profile = coalesce(n.profile, d.profile),
         revision = n.revision
    FROM unnest($1::text[], $2::text[], $3::text[], $4::int8[]) AS n(device_id, status, profile, revision)
   WHERE d.device_id = n.device_id AND d.revision < n.revision`,
);

interface Change {
  status: string | null;
  profile: string | null;
  revision: bigint;
}

export function devicesProjector(): Projector {
  return {
    name: 'devices',
    version: 2,
    eventTypes: [
      'DeviceRegistered',
      'DeviceLifecycleChanged',
      'DeviceProfileVerified',
      'DeviceProfileDowngraded',
    ],
    tables: ['devices'],
    schemaSql,
    queryIndexSql,
    async apply(events, db) {
      // A device's later events always follow its registration in the global order, so inserting the
      // batch's registrations first and then folding its changes per device is the same as one by one.
      const registered = new Map<string, RecordedEvent>();
      const changes = new Map<string, Change>();
      for (const event of events) {
        const e = { type: event.type, data: event.data } as DeviceEvent;
        if (e.type === 'DeviceRegistered') {
          if (!registered.has(e.data.deviceId)) registered.set(e.data.deviceId, event);
          continue;
        }
        const change = changes.get(e.data.deviceId) ?? { status: null, profile: null, revision: -1n };
        if (e.type === 'DeviceLifecycleChanged') change.status = e.data.status;
        else if (e.type === 'DeviceProfileVerified') change.profile = 'verified';
        else if (e.type === 'DeviceProfileDowngraded') change.profile = 'draft';
        else continue;
        change.revision = event.revision;
        changes.set(e.data.deviceId, change);
      }
      if (registered.size > 0) await insertRegistered([...registered.values()], db);
      if (changes.size > 0) {
        const entries = [...changes.entries()];
        await db.query(
          bind(UPDATE_CHANGED, [
            entries.map(([id]) => id),
            entries.map(([, c]) => c.status),
            entries.map(([, c]) => c.profile),
            entries.map(([, c]) => String(c.revision)),
          ]),
        );
      }
    },
  };
}

/** Each device's capabilities go as the text of a PostgreSQL array, so no JSON is parsed per row. */
async function insertRegistered(events: RecordedEvent[], db: Parameters<Projector['apply']>[1]) {
  const data = events.map((e) => e.data as Extract<DeviceEvent, { type: 'DeviceRegistered' }>['data']);
  await db.query(
    bind(INSERT_REGISTERED, [
      data.map((d) => d.deviceId),
      data.map((d) => d.projectId),
      data.map((d) => d.siteId),
      data.map((d) => d.parentHubId),
      data.map((d) => d.kind),
      data.map((d) => d.manufacturer),
      data.map((d) => d.productModel),
      // Capabilities are strings (the event's schema), which arrayLiteral always writes.
      data.map((d) => arrayLiteral(d.capabilities)!),
      data.map((d) => d.profile),
      events.map((e) => e.recordedAt.toISOString()),
      events.map((e) => String(e.revision)),
    ]),
  );
}
