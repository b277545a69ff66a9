import { prepared } from '../../infra/postgres/prepared.js';

/** The statements the Postgres adapter runs; the append logic itself is the append_events SQL function. */

export const APPEND_EVENTS = `
  SELECT next_revision, last_transaction_id::text AS transaction_id, last_global_position
    FROM eventstore.append_events($1, $2, $3::uuid[], $4::text[], $5::json[], $6::json[])`;

export const APPEND_STREAMS = `
  SELECT next_revision, last_transaction_id::text AS transaction_id, last_global_position
    FROM eventstore.append_streams($1::text[], $2::bigint[], $3::integer[], $4::uuid[], $5::text[],
                                   $6::json[], $7::json[])`;

export const STREAM_REVISIONS = `
  SELECT stream_name, revision FROM eventstore.streams WHERE stream_name = ANY ($1::text[])`;

export const APPEND_BATCH = prepared(
  'eventstore.append-batch',
  `
  SELECT event_id, inserted, transaction_id::text AS transaction_id, global_position
    FROM eventstore.append_batch($1::text[], $2::uuid[], $3::text[], $4::json[], $5::json[])`,
);

/**
 * The columns a read returns besides the event itself: its position's two numbers (position.ts encodes
 * them) and its recording time in whole epoch milliseconds, the microseconds cut off as pg's timestamp
 * parser cuts them (exactly so because `extract` gives a numeric since PostgreSQL 14, as on CI's 15 and
 * the embedded 18). pg's parser, a regular expression per timestamp, cost a reader more than a tenth of its
 * time (docs/performance.md, "Event pages: times in milliseconds, positions without BigInt").
 */
const POSITION_AND_RECORDED_MS = `
         transaction_id::text AS transaction_id, global_position,
         floor(extract(epoch FROM recorded_at) * 1000)::float8 AS recorded_ms`;

export const READ_STREAM = prepared(
  'eventstore.read-stream',
  `
  SELECT event_id, event_type, data, metadata, stream_name, stream_revision, ${POSITION_AND_RECORDED_MS}
    FROM eventstore.events
   WHERE stream_name = $1 AND stream_revision >= $2
   ORDER BY stream_revision
   LIMIT $3`,
);

/**
 * One page of the global order after ($1, $2), only from transactions older than every running one, so
 * nothing can later commit before a position a reader has passed. The last row (is_head) carries the
 * newest visible position, so a filtered reader can move its checkpoint past events it did not want.
 * The statements live in functions (functions/read_all_page.sql, read_types_page.sql) that pin the plan to
 * an ordered index walk.
 */
export const READ_ALL = prepared(
  'eventstore.read-all',
  `
  SELECT is_head, event_id, event_type, data, metadata, stream_name, stream_revision, ${POSITION_AND_RECORDED_MS}
    FROM eventstore.read_all_page($1::text::xid8, $2::bigint, $3::int)`,
);

/** The same page restricted to the types in $4 (events_type_order), merged in global order. */
export const READ_ALL_OF_TYPES = prepared(
  'eventstore.read-types',
  `
  SELECT is_head, event_id, event_type, data, metadata, stream_name, stream_revision, ${POSITION_AND_RECORDED_MS}
    FROM eventstore.read_types_page($1::text::xid8, $2::bigint, $3::int, $4::text[])`,
);

/** The same page with each event's data as the stored text (the audit chain hashes it). */
export const READ_ALL_OF_TYPES_AS_STORED = prepared(
  'eventstore.read-types-as-stored',
  `
  SELECT is_head, event_id, event_type, data::text AS data, metadata::text AS metadata, stream_name, stream_revision,
         ${POSITION_AND_RECORDED_MS}
    FROM eventstore.read_types_page($1::text::xid8, $2::bigint, $3::int, $4::text[])`,
);

/**
 * The same, read type by type and merged (functions/read_types_merged_page.sql): for long reads of many
 * types (audit verification, export), steady whatever the statistics; at the head, a plan a type costs more.
 */
export const READ_LONG_OF_TYPES_AS_STORED = prepared(
  'eventstore.read-long-of-types-as-stored',
  `
  SELECT is_head, event_id, event_type, data::text AS data, metadata::text AS metadata, stream_name, stream_revision,
         ${POSITION_AND_RECORDED_MS}
    FROM eventstore.read_types_merged_page($1::text::xid8, $2::bigint, $3::int, $4::text[])`,
);

export const HEAD_POSITION = `
  SELECT e.transaction_id::text AS transaction_id, e.global_position
    FROM eventstore.events e
   WHERE e.transaction_id < (SELECT eventstore.read_horizon())
   ORDER BY e.transaction_id DESC, e.global_position DESC
   LIMIT 1`;

export const APPEND_NOTIFICATION_CHANNEL = 'eventstore_append';

export const COUNT_EVENTS = 'SELECT count(*) AS n FROM eventstore.events WHERE event_type = ANY ($1::text[])';

/** Events of types $3 after position ($1, $2) that readers can see, at most $4 of them. */
export const COUNT_EVENTS_AFTER = `
  SELECT count(*) AS n FROM (
    SELECT 1 FROM eventstore.events e
     WHERE e.event_type = ANY ($3::text[])
       AND (e.transaction_id, e.global_position) > ($1::text::xid8, $2::bigint)
       AND e.transaction_id < (SELECT eventstore.read_horizon())
     LIMIT $4) pending`;

/**
 * One retention batch: of the first $3 events of each type in $1 (global order, along events_type_order),
 * deletes those recorded before $2, and moves each type's horizon to the newest position deleted. Events
 * are recorded in nearly global order, so walking from the oldest finds the expired ones first; a batch
 * that finds none ends the run.
 */
export const DELETE_EVENTS_BEFORE = `
  WITH doomed AS (
    SELECT x.transaction_id, x.global_position
      FROM unnest($1::text[]) AS t(event_type),
      LATERAL (
        SELECT e.transaction_id, e.global_position, e.recorded_at
          FROM eventstore.events e
         WHERE e.event_type = t.event_type
         ORDER BY e.transaction_id, e.global_position
         LIMIT $3
      ) x
     WHERE x.recorded_at < $2
  ),
  deleted AS (
    DELETE FROM eventstore.events e
     USING doomed d
     WHERE e.transaction_id = d.transaction_id AND e.global_position = d.global_position
    RETURNING e.event_type, e.transaction_id, e.global_position
  ),
  newest AS (
    SELECT DISTINCT ON (event_type) event_type, transaction_id, global_position
      FROM deleted
     ORDER BY event_type, transaction_id DESC, global_position DESC
  ),
  horizon AS (
    INSERT INTO eventstore.retention_horizons AS h (event_type, transaction_id, global_position, recorded_before)
    SELECT n.event_type, n.transaction_id, n.global_position, $2 FROM newest n
    ON CONFLICT (event_type) DO UPDATE
       SET transaction_id = excluded.transaction_id,
           global_position = excluded.global_position,
           recorded_before = excluded.recorded_before,
           updated_at = now()
     WHERE (excluded.transaction_id, excluded.global_position) > (h.transaction_id, h.global_position)
  )
  SELECT count(*) AS deleted FROM deleted`;

// Ordered by the table's columns (h.), not the output's: a bare name in ORDER BY means the output column,
// here the id as text, and "998" sorts after "1015".
export const RETENTION_HORIZON = `
  SELECT h.transaction_id::text AS transaction_id, h.global_position, h.recorded_before
    FROM eventstore.retention_horizons h
   WHERE h.event_type = ANY ($1::text[])
   ORDER BY h.transaction_id DESC, h.global_position DESC
   LIMIT 1`;
