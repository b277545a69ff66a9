-- read_horizon: readers see only events whose transaction is below it, so that nothing can commit behind a
-- reader (docs/eventstore.md). It is the oldest transaction the snapshot saw running, skipping those that
-- can never insert events:
--  - Transactions of other databases on the same server (another service, another tenant, another test
--    suite), skipped only when positively known to belong to another database (pg_stat_get_activity: its
--    backend's database); one that ended in the meantime, or any we cannot place (a prepared transaction),
--    still counts. Transaction ids are never reused, so a stale activity row cannot make one of ours look
--    foreign.
--  - Read-model writers: projectors write their read models in one transaction per batch, and a telemetry
--    batch stays open for a good part of a second; counted, one projector's batch would be every
--    subscriber's latency. They connect as 'device-cloud-read-models' (read-model-writers.ts), and the
--    trigger of refuse_events_from_read_model_writers.sql refuses any insert into the events from such a
--    connection, so the skip can never hide an event from a reader.
-- Cost: ~45 us a read, against ~3 us for the snapshot's xmin.
CREATE OR REPLACE FUNCTION eventstore.read_horizon() RETURNS xid8 LANGUAGE sql STABLE AS $$
  SELECT coalesce(
           (SELECT min(x.xid)
              FROM pg_snapshot_xip(q.snapshot) AS x(xid)
             WHERE x.xid::xid NOT IN (
                     SELECT a.backend_xid FROM pg_stat_get_activity(NULL) a
                      WHERE a.backend_xid IS NOT NULL
                        AND (a.datid <> (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
                             OR a.application_name = 'device-cloud-read-models'))),
           pg_snapshot_xmax(q.snapshot))
    FROM (SELECT pg_current_snapshot() AS snapshot) q
$$;
