-- append_batch: appends events to many streams at revision "any" in one statement, for high-volume ingest.
-- Idempotent by event id: an id already stored (or repeated within the batch) is not written again and
-- comes back with inserted = false and its stored position. Streams are advanced in name order, so
-- concurrent batches over the same streams cannot deadlock. The final SELECT of stored events runs on the
-- statement's snapshot, which does not include the rows this statement writes: it finds exactly the events
-- stored before.
--
-- One SQL statement, not a PL/pgSQL body around a temporary table: creating and truncating that table cost
-- ~2.3 ms a call, more than the 200 events of a typical ingest batch took to insert. Each stream's events
-- are numbered without joining the batch to itself: the planner estimates one row for the batch (the
-- anti-join on stored ids makes it guess that most are stored), so a join to the advanced streams and to
-- the per-stream counts ran as nested loops, batch size squared string comparisons, twice: at 500
-- messages, nearly half the function's cost (docs/decisions/0007-append-join-and-resting-live-hub.md). The
-- streams' new revisions are gathered into one jsonb object, looked up per event, and each stream's count
-- comes from a window over the input.
CREATE OR REPLACE FUNCTION eventstore.append_batch(
  p_streams text[],
  p_ids uuid[],
  p_types text[],
  p_data json[],
  p_metadata json[]
) RETURNS TABLE (event_id uuid, inserted boolean, transaction_id xid8, global_position bigint)
LANGUAGE sql AS $$
  WITH input AS MATERIALIZED (
    -- The first occurrence of each id that is not already stored.
    SELECT DISTINCT ON (u.id) u.ord, u.stream AS stream_name, u.id AS event_id, u.type AS event_type,
           eventstore.storable(u.data) AS data,
           eventstore.storable(coalesce(u.metadata, '{}'::json)) AS metadata
      FROM unnest(p_streams, p_ids, p_types, p_data, p_metadata) WITH ORDINALITY
           AS u(stream, id, type, data, metadata, ord)
     WHERE NOT EXISTS (SELECT 1 FROM eventstore.events e WHERE e.event_id = u.id)
     ORDER BY u.id, u.ord
  ),
  counts AS (
    SELECT i.stream_name, count(*) AS n FROM input i GROUP BY i.stream_name
  ),
  advanced AS (
    INSERT INTO eventstore.streams AS s (stream_name, revision)
    SELECT c.stream_name, c.n - 1 FROM counts c ORDER BY c.stream_name
    ON CONFLICT (stream_name) DO UPDATE SET revision = s.revision + excluded.revision + 1
    RETURNING s.stream_name, s.revision
  ),
  last_revisions AS (
    SELECT jsonb_object_agg(a.stream_name, a.revision) AS by_stream FROM advanced a
  ),
  numbered AS (
    -- A stream's events take the revisions up to its new last one, in batch order.
    SELECT i.*,
           ((SELECT l.by_stream FROM last_revisions l) ->> i.stream_name)::bigint
             - count(*) OVER per_stream + row_number() OVER per_stream AS stream_revision
      FROM input i
    WINDOW per_stream AS (PARTITION BY i.stream_name ORDER BY i.ord
                          ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
  ),
  written AS (
    INSERT INTO eventstore.events (stream_name, stream_revision, event_id, event_type, data, metadata)
    SELECT n.stream_name, n.stream_revision, n.event_id, n.event_type, n.data, n.metadata
      FROM numbered n ORDER BY n.ord
    RETURNING eventstore.events.event_id, eventstore.events.transaction_id, eventstore.events.global_position
  )
  SELECT w.event_id, true, w.transaction_id, w.global_position FROM written w
  UNION ALL
  SELECT e.event_id, false, e.transaction_id, e.global_position
    FROM eventstore.events e
   WHERE e.event_id = ANY (p_ids)
$$;
