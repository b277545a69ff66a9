-- read_types_merged_page: read_types_page's page (the same rows, the same head row), planned type by type.
-- read_types_page takes its types from an array, so one plan serves every type with a guess at how common
-- a type is: on an analysed store where some types fill most of the table, that guess walked the primary
-- key for every type, filtering, so a type with no events past the position read the rest of the table for
-- each page (1,000,000 control events: verification fell from ~30,000 to ~3,000 events/s). Here each type
-- is a branch of its own, written into the statement, planned with its own statistics; the branches are
-- merged in global order (Merge Append), so the page stops after p_max rows in all instead of reading
-- p_max of every type and sorting them. Planning a branch a type makes a read of the few events at the head
-- cost more (8 ms against 2.5 ms for the last 10): long reads of many types use it (ReadAllOptions.longRead:
-- audit verification, export); projectors at the head keep read_types_page.
CREATE OR REPLACE FUNCTION eventstore.read_types_merged_page(p_tx xid8, p_pos bigint, p_max integer, p_types text[])
RETURNS TABLE (is_head boolean, event_id uuid, event_type text, data json, metadata json, stream_name text,
               stream_revision bigint, transaction_id xid8, global_position bigint, recorded_at timestamptz)
LANGUAGE plpgsql STABLE SET enable_bitmapscan = off SET work_mem = '64MB' AS $$
DECLARE
  v_horizon xid8 := eventstore.read_horizon();
  v_branches text;
BEGIN
  SELECT string_agg(format(
           '(SELECT x.event_id, x.event_type, x.data, x.metadata, x.stream_name, x.stream_revision,
                    x.transaction_id, x.global_position, x.recorded_at
               FROM eventstore.events x
              WHERE x.event_type = %L AND (x.transaction_id, x.global_position) > ($1, $2)
                AND x.transaction_id < $3
              ORDER BY x.transaction_id, x.global_position LIMIT $4)', t.event_type), ' UNION ALL ')
    INTO v_branches
    FROM (SELECT DISTINCT u.event_type FROM unnest(p_types) AS u(event_type)) t;
  RETURN QUERY EXECUTE format(
    'WITH page AS (SELECT * FROM (%s) b ORDER BY b.transaction_id, b.global_position LIMIT $4),
          head AS (SELECT e.transaction_id, e.global_position FROM eventstore.events e
                    WHERE e.transaction_id < $3
                    ORDER BY e.transaction_id DESC, e.global_position DESC LIMIT 1)
     SELECT false, p.event_id, p.event_type, p.data, p.metadata, p.stream_name, p.stream_revision,
            p.transaction_id, p.global_position, p.recorded_at FROM page p
     UNION ALL
     SELECT true, NULL, NULL, NULL, NULL, NULL, NULL, h.transaction_id, h.global_position, NULL FROM head h
     ORDER BY 1, 8, 9',
    coalesce(v_branches, 'SELECT x.event_id, x.event_type, x.data, x.metadata, x.stream_name,
                                 x.stream_revision, x.transaction_id, x.global_position, x.recorded_at
                            FROM eventstore.events x WHERE false'))
    USING p_tx, p_pos, v_horizon, p_max;
END
$$;
