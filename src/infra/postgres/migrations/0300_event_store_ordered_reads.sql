-- Pages of the global order, always walked in index order. Appends outrun the planner's statistics: a
-- table that grew since its last ANALYZE looks almost empty past the checkpoint, so the planner picked a
-- bitmap scan of every event after it and a sort (spilling to disk with their payloads) for each page:
-- 545 ms for 2,000 events 60,000 behind the head, and the further a projector fell behind, the slower it
-- read. The functions switch bitmap scans off for their own statements only, which leaves the ordered
-- index scan that stops after the page; the horizon is a scalar subquery, so it bounds the index range.
-- Each page ends with one is_head row: the newest visible position (see adapter.readAll).
CREATE FUNCTION eventstore.read_all_page(p_tx xid8, p_pos bigint, p_max integer)
RETURNS TABLE (is_head boolean, event_id uuid, event_type text, data jsonb, metadata jsonb, stream_name text,
               stream_revision bigint, transaction_id xid8, global_position bigint, recorded_at timestamptz)
LANGUAGE sql STABLE SET enable_bitmapscan = off AS $$
  WITH horizon AS MATERIALIZED (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin),
  page AS (
    SELECT e.event_id, e.event_type, e.data, e.metadata, e.stream_name, e.stream_revision,
           e.transaction_id, e.global_position, e.recorded_at
      FROM eventstore.events e
     WHERE (e.transaction_id, e.global_position) > (p_tx, p_pos)
       AND e.transaction_id < (SELECT h.xmin FROM horizon h)
     ORDER BY e.transaction_id, e.global_position
     LIMIT p_max
  ),
  head AS (
    SELECT e.transaction_id, e.global_position
      FROM eventstore.events e
     WHERE e.transaction_id < (SELECT h.xmin FROM horizon h)
     ORDER BY e.transaction_id DESC, e.global_position DESC
     LIMIT 1
  )
  SELECT false, p.event_id, p.event_type, p.data, p.metadata, p.stream_name, p.stream_revision,
         p.transaction_id, p.global_position, p.recorded_at
    FROM page p
  UNION ALL
  SELECT true, NULL, NULL, NULL, NULL, NULL, NULL, h.transaction_id, h.global_position, NULL
    FROM head h
  ORDER BY 1, 8, 9
$$;

-- The same restricted to some types: one ordered range of events_type_order per type, merged.
CREATE FUNCTION eventstore.read_types_page(p_tx xid8, p_pos bigint, p_max integer, p_types text[])
RETURNS TABLE (is_head boolean, event_id uuid, event_type text, data jsonb, metadata jsonb, stream_name text,
               stream_revision bigint, transaction_id xid8, global_position bigint, recorded_at timestamptz)
LANGUAGE sql STABLE SET enable_bitmapscan = off AS $$
  WITH horizon AS MATERIALIZED (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin),
  page AS (
    SELECT e.*
      FROM unnest(p_types) AS t(event_type),
      LATERAL (
        SELECT x.event_id, x.event_type, x.data, x.metadata, x.stream_name, x.stream_revision,
               x.transaction_id, x.global_position, x.recorded_at
          FROM eventstore.events x
         WHERE x.event_type = t.event_type
           AND (x.transaction_id, x.global_position) > (p_tx, p_pos)
           AND x.transaction_id < (SELECT h.xmin FROM horizon h)
         ORDER BY x.transaction_id, x.global_position
         LIMIT p_max
      ) e
     ORDER BY e.transaction_id, e.global_position
     LIMIT p_max
  ),
  head AS (
    SELECT e.transaction_id, e.global_position
      FROM eventstore.events e
     WHERE e.transaction_id < (SELECT h.xmin FROM horizon h)
     ORDER BY e.transaction_id DESC, e.global_position DESC
     LIMIT 1
  )
  SELECT false, p.event_id, p.event_type, p.data, p.metadata, p.stream_name, p.stream_revision,
         p.transaction_id, p.global_position, p.recorded_at
    FROM page p
  UNION ALL
  SELECT true, NULL, NULL, NULL, NULL, NULL, NULL, h.transaction_id, h.global_position, NULL
    FROM head h
  ORDER BY 1, 8, 9
$$;
