-- read_types_page: read_all_page restricted to some types: one ordered range of events_type_order per type,
-- merged. Its settings are read_all_page's, for the same reasons; it sorts twice (the merge of its types,
-- then with the head row).
CREATE OR REPLACE FUNCTION eventstore.read_types_page(p_tx xid8, p_pos bigint, p_max integer, p_types text[])
RETURNS TABLE (is_head boolean, event_id uuid, event_type text, data json, metadata json, stream_name text,
               stream_revision bigint, transaction_id xid8, global_position bigint, recorded_at timestamptz)
LANGUAGE sql STABLE SET enable_bitmapscan = off SET work_mem = '64MB' AS $$
  WITH horizon AS MATERIALIZED (SELECT eventstore.read_horizon() AS xmin),
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
