-- The read horizon no longer waits for read-model writers.
--
-- Projectors write their read models in one transaction per batch, with an id from its first write until it
-- commits: a telemetry batch of thousands of readings stays open for a good part of a second. Every such
-- transaction held the horizon (migration 0305) back, so the state projector, the live stream and the command
-- dispatcher all saw new events only once the telemetry batch had committed: one projector's batch became
-- every subscriber's latency. A transaction can hold a reader back only if it might still insert events, and
-- read-model writers never do: they connect as 'device-cloud-read-models' (src/eventstore/postgres/
-- read-model-writers.ts), which the horizon now skips, and the trigger below refuses any insert into the
-- events from such a connection, so the skip can never hide an event from a reader.
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

CREATE FUNCTION eventstore.refuse_events_from_read_model_writers() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('application_name') = 'device-cloud-read-models' THEN
    RAISE EXCEPTION 'a read-model writer may not append events: readers do not wait for its transactions'
      USING ERRCODE = 'DC003';
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER events_never_from_read_model_writers
  BEFORE INSERT ON eventstore.events
  FOR EACH STATEMENT EXECUTE FUNCTION eventstore.refuse_events_from_read_model_writers();
