-- read_all_page: a page of the global order after (p_tx, p_pos), at most p_max events below the read
-- horizon, ending with one is_head row: the newest visible position (see adapter.readAll).
--
-- Always walked in index order. Appends outrun the planner's statistics: a table that grew since its last
-- ANALYZE looks almost empty past the checkpoint, so the planner picked a bitmap scan of every event after
-- it and a sort (spilling to disk with their payloads) for each page, and the further a projector fell
-- behind, the slower it read. Bitmap scans are off for this function's statements only, which leaves the
-- ordered index scan that stops after the page; the horizon is a scalar subquery, so it bounds the index
-- range. A page is put in order with the head row holding whole rows, and a projector's page of 10,000
-- readings messages is ~7 MB, over the default work_mem (4 MB): the function may use enough memory for the
-- largest page a projector asks for (docs/decisions/0001-ordered-pages-and-telemetry-folded-in-memory.md,
-- docs/decisions/0015-event-pages-sorted-in-memory.md).
CREATE OR REPLACE FUNCTION eventstore.read_all_page(p_tx xid8, p_pos bigint, p_max integer)
RETURNS TABLE (is_head boolean, event_id uuid, event_type text, data json, metadata json, stream_name text,
               stream_revision bigint, transaction_id xid8, global_position bigint, recorded_at timestamptz)
LANGUAGE sql STABLE SET enable_bitmapscan = off SET work_mem = '64MB' AS $$
  WITH horizon AS MATERIALIZED (SELECT eventstore.read_horizon() AS xmin),
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
