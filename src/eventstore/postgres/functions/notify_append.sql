-- notify_append: wakes subscribers after every statement that appends (trigger events_notify, triggers.sql);
-- correctness never depends on it (they also poll). The notification names the transaction that appended
-- and the event types it wrote, as "<xid>:<type>,<type>". A subscriber skips a notification none of whose
-- types it follows (most of them: readings wake the two projectors that read them, not all the others), and
-- one woken by it can tell an event it has not seen yet (its transaction is past the visible head because an
-- older open transaction still hides it: read again soon) from one it already read. A payload too long for
-- NOTIFY names the transaction only (every subscriber wakes).
CREATE OR REPLACE FUNCTION eventstore.notify_append() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_types text := (SELECT string_agg(DISTINCT a.event_type, ',') FROM appended a);
BEGIN
  PERFORM pg_notify(
    'eventstore_append',
    pg_current_xact_id()::text || CASE WHEN length(v_types) < 7000 THEN ':' || v_types ELSE '' END
  );
  RETURN NULL;
END
$$;
