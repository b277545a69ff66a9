import { readFileSync } from 'node:fs';
import { eventTypes } from '../../domain/events/index.js';
import {
  int8Array,
  jsonbArray,
  textArray,
  timestamptzArray,
  uuidArray,
} from '../../infra/postgres/binary-array.js';
import { bind, prepared } from '../../infra/postgres/prepared.js';
import type { Projector } from '../projector.js';

const schemaSql = readFileSync(new URL('./schema.sql', import.meta.url), 'utf8');
const queryIndexSql = readFileSync(new URL('./query-indexes.sql', import.meta.url), 'utf8');

// Replaying a batch twice is harmless: a position already present is left as it is. Prepared, with its
// arrays in binary (binary-array.ts): a rebuild runs it once per batch of up to 10,000 events.
const INSERT_AUDIT_ROWS = prepared(
  'audit.record-batch',
  `
  INSERT INTO audit_log (position, event_id, stream_name, stream_revision, event_type, recorded_at, data, metadata)
  SELECT * FROM unnest($1::text[], $2::uuid[], $3::text[], $4::int8[], $5::text[], $6::timestamptz[], $7::jsonb[], $8::jsonb[])
  ON CONFLICT (position) DO NOTHING`,
);

/**
 * Facts an auditor needs, minus credentials: a client's secret hash stays in the event store (where the token
 * endpoint reads it) and is never copied into the log.
 */
const REDACTED_FIELDS = ['secretHash'];

function redacted(data: unknown): unknown {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return data;
  const copy: Record<string, unknown> = { ...(data as Record<string, unknown>) };
  for (const field of REDACTED_FIELDS) if (field in copy) copy[field] = '[redacted]';
  return copy;
}

/**
 * The audit log projector; by default it follows every event type that is kept for ever. Version 2 stopped
 * copying client secret hashes: a log written by version 1 is rebuilt from the events.
 */
export function auditProjector(
  types: readonly string[] = eventTypes((d) => d.retention === 'forever'),
): Projector {
  return {
    name: 'audit',
    version: 2,
    eventTypes: types,
    tables: ['audit_log'],
    schemaSql,
    queryIndexSql,
    async apply(events, db) {
      await db.query(
        bind(INSERT_AUDIT_ROWS, [
          textArray(events.map((e) => e.position)),
          uuidArray(events.map((e) => e.id)),
          textArray(events.map((e) => e.streamName)),
          // Exact: a stream's revision stays far below 2^53.
          int8Array(events.map((e) => Number(e.revision))),
          textArray(events.map((e) => e.type)),
          timestamptzArray(events.map((e) => e.recordedAt.getTime())),
          jsonbArray(events.map((e) => JSON.stringify(redacted(e.data)))),
          jsonbArray(events.map((e) => JSON.stringify(e.metadata))),
        ]),
      );
    },
  };
}
