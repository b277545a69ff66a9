-- append_batch: appends events to many streams at revision "any" in one statement, for high-volume
-- ingest. Idempotent by event id: an id already stored (or repeated within the batch) is not written
-- again and comes back with inserted = false and its stored position. Streams are locked in name order,
-- so concurrent batches over the same streams cannot deadlock.
CREATE FUNCTION eventstore.append_batch(
  p_streams text[],
  p_ids uuid[],
  p_types text[],
  p_data jsonb[],
  p_metadata jsonb[]
) RETURNS TABLE (event_id uuid, inserted boolean, transaction_id xid8, global_position bigint)
LANGUAGE plpgsql AS $$
BEGIN
  CREATE TEMP TABLE IF NOT EXISTS pg_temp.append_batch_input (
    ord bigint, stream_name text, event_id uuid, event_type text, data jsonb, metadata jsonb
  ) ON COMMIT DELETE ROWS;
  TRUNCATE pg_temp.append_batch_input;

  -- The first occurrence of each id that is not already stored.
  INSERT INTO pg_temp.append_batch_input
  SELECT DISTINCT ON (u.id) u.ord, u.stream, u.id, u.type, u.data, coalesce(u.metadata, '{}'::jsonb)
    FROM unnest(p_streams, p_ids, p_types, p_data, p_metadata) WITH ORDINALITY AS u(stream, id, type, data, metadata, ord)
   WHERE NOT EXISTS (SELECT 1 FROM eventstore.events e WHERE e.event_id = u.id)
   ORDER BY u.id, u.ord;

  RETURN QUERY
  WITH counts AS (
    SELECT i.stream_name, count(*) AS n FROM pg_temp.append_batch_input i GROUP BY i.stream_name
  ),
  advanced AS (
    INSERT INTO eventstore.streams AS s (stream_name, revision)
    SELECT c.stream_name, c.n - 1 FROM counts c ORDER BY c.stream_name
    ON CONFLICT (stream_name) DO UPDATE SET revision = s.revision + excluded.revision + 1
    RETURNING s.stream_name, s.revision
  ),
  numbered AS (
    SELECT i.*, a.revision - c.n + row_number() OVER (PARTITION BY i.stream_name ORDER BY i.ord) AS stream_revision
      FROM pg_temp.append_batch_input i
      JOIN advanced a ON a.stream_name = i.stream_name
      JOIN counts c ON c.stream_name = i.stream_name
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
     AND NOT EXISTS (SELECT 1 FROM pg_temp.append_batch_input i WHERE i.event_id = e.event_id);
END
$$;
