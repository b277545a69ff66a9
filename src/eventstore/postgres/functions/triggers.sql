-- The triggers on eventstore.events, each as pg_get_triggerdef prints it. Each is made again only when the
-- one in force differs (or is missing): creating or replacing a trigger locks the table against writes until
-- the migrate commits, and would wait for every append in flight on every start-up. A definition written
-- otherwise than PostgreSQL prints it back is simply made again each time.
DO $$
DECLARE
  v_trigger record;
BEGIN
  FOR v_trigger IN
    SELECT d.definition,
           (SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t
             WHERE t.tgrelid = 'eventstore.events'::regclass AND t.tgname = d.name) AS in_force
      FROM (VALUES
        ('events_notify',
         'CREATE TRIGGER events_notify AFTER INSERT ON eventstore.events REFERENCING NEW TABLE AS appended '
         'FOR EACH STATEMENT EXECUTE FUNCTION eventstore.notify_append()'),
        ('events_never_from_read_model_writers',
         'CREATE TRIGGER events_never_from_read_model_writers BEFORE INSERT ON eventstore.events '
         'FOR EACH STATEMENT EXECUTE FUNCTION eventstore.refuse_events_from_read_model_writers()')
      ) AS d(name, definition)
  LOOP
    IF v_trigger.in_force IS DISTINCT FROM v_trigger.definition THEN
      EXECUTE regexp_replace(v_trigger.definition, '^CREATE TRIGGER', 'CREATE OR REPLACE TRIGGER');
    END IF;
  END LOOP;
END
$$;
