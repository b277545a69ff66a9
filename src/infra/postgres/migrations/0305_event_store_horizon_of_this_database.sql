-- The read horizon counts only transactions that could write our events: those of this database.
--
-- Readers see events whose transaction is below the horizon, so that nothing can commit behind a reader
-- (docs/eventstore.md). The horizon was the snapshot's xmin: the oldest transaction still running anywhere
-- on the server. A long transaction in another database of the same server (another service, another
-- tenant, another test suite) then held back every subscriber here, though it can never insert into this
-- table. Now a transaction the snapshot saw running is skipped only when it is positively known to belong
-- to another database (pg_stat_get_activity: its backend's database); one that ended in the meantime, or
-- any we cannot place (a prepared transaction), still counts. Transaction ids are never reused, so a stale
-- activity row cannot make one of ours look foreign. Cost: ~45 us a read, against ~3 us.
CREATE FUNCTION eventstore.read_horizon() RETURNS xid8 LANGUAGE sql STABLE AS $$
  SELECT coalesce(
           (SELECT min(x.xid)
              FROM pg_snapshot_xip(q.snapshot) AS x(xid)
             WHERE x.xid::xid NOT IN (
                     SELECT a.backend_xid FROM pg_stat_get_activity(NULL) a
                      WHERE a.backend_xid IS NOT NULL
                        AND a.datid <> (SELECT d.oid FROM pg_database d WHERE d.datname = current_database()))),
           pg_snapshot_xmax(q.snapshot))
    FROM (SELECT pg_current_snapshot() AS snapshot) q
$$;

-- The page functions of migration 0300, with that horizon.
CREATE OR REPLACE FUNCTION eventstore.read_all_page(p_tx xid8, p_pos bigint, p_max integer)
RETURNS TABLE (is_head boolean, event_id uuid, event_type text, data jsonb, metadata jsonb, stream_name text,
               stream_revision bigint, transaction_id xid8, global_position bigint, recorded_at timestamptz)
LANGUAGE sql STABLE SET enable_bitmapscan = off AS $$
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

-- The same restricted to some types: one ordered range of events_type_order per type, merged.
CREATE OR REPLACE FUNCTION eventstore.read_types_page(p_tx xid8, p_pos bigint, p_max integer, p_types text[])
RETURNS TABLE (is_head boolean, event_id uuid, event_type text, data jsonb, metadata jsonb, stream_name text,
               stream_revision bigint, transaction_id xid8, global_position bigint, recorded_at timestamptz)
LANGUAGE sql STABLE SET enable_bitmapscan = off AS $$
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
