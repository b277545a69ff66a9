-- telemetry_raw goes from one row per reading to one row per instant of a message: neighbouring readings of
-- one event filed at the same time with the same device time, capabilities and values side by side in
-- message order (src/projections/telemetry/schema.sql). A row and an index entry per reading cost about as
-- much as the rest of the telemetry projector together. The read model outlives its events, so this is a
-- migration, not a rebuild, and it takes time on a large table (docs/telemetry.md, section 7): partition by
-- partition, each is recreated under its own name and bounds and its rows regrouped, each group keeping
-- the smallest order of application of its readings; the indexes are built once the rows are in (a
-- converted table's first partition keeps its BRIN index for retention's batched deletes), and the old
-- table is dropped. A partition whose detach was interrupted is copied too: retention detaches it again.
-- Nothing to do where the projector has not created its tables yet or where they have the new shape.
DO $$
DECLARE
  part record;
  next_applied bigint;
  zone text := current_setting('TimeZone');
  style text := current_setting('DateStyle');
BEGIN
  IF NOT EXISTS (SELECT 1 FROM information_schema.columns
                  WHERE table_schema = 'public' AND table_name = 'telemetry_raw' AND column_name = 'capability') THEN
    RETURN;
  END IF;
  -- Partition bounds are read back as text: in a zone whose abbreviation means another zone elsewhere (CST,
  -- IST) they would move. Restored at the end for whatever runs next in this transaction.
  PERFORM set_config('TimeZone', 'UTC', true);
  PERFORM set_config('DateStyle', 'ISO, YMD', true);
  ALTER TABLE public.telemetry_raw RENAME TO telemetry_raw_per_reading;
  ALTER INDEX IF EXISTS public.telemetry_raw_series RENAME TO telemetry_raw_per_reading_series;
  -- Created on the old table if the projector's schema ran before this migration: the name is needed.
  DROP INDEX IF EXISTS public.telemetry_raw_instants;
  CREATE TABLE public.telemetry_raw (
    device_id text COLLATE "C" NOT NULL,
    filed_at timestamptz NOT NULL,
    event_id uuid NOT NULL,
    device_time timestamptz,
    server_time timestamptz NOT NULL,
    capabilities text[] COLLATE "C" NOT NULL,
    reading_values jsonb NOT NULL,
    applied bigint GENERATED ALWAYS AS IDENTITY
  ) PARTITION BY RANGE (filed_at);
  FOR part IN
    SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'public.telemetry_raw_per_reading'::regclass
  LOOP
    EXECUTE format('ALTER TABLE public.%I RENAME TO %I', part.name, left(part.name || '_per_reading', 63));
    EXECUTE format('CREATE TABLE public.%I PARTITION OF public.telemetry_raw %s', part.name, part.bound);
    -- A run of neighbouring readings (consecutive ordinals) with the same filing and device time is a row.
    EXECUTE format($copy$
      INSERT INTO public.telemetry_raw (device_id, filed_at, event_id, device_time, server_time, capabilities,
                                        reading_values, applied)
      OVERRIDING SYSTEM VALUE
      SELECT r.device_id, r.filed_at, r.event_id, r.device_time, r.server_time,
             array_agg(r.capability ORDER BY r.ordinal), jsonb_agg(r.value ORDER BY r.ordinal), min(r.applied)
        FROM (SELECT s.*, count(*) FILTER (WHERE s.starts) OVER (PARTITION BY s.event_id ORDER BY s.ordinal) AS run
                FROM (SELECT x.*,
                             x.filed_at IS DISTINCT FROM lag(x.filed_at) OVER w
                             OR x.device_time IS DISTINCT FROM lag(x.device_time) OVER w
                             OR x.ordinal <> lag(x.ordinal) OVER w + 1 AS starts
                        FROM public.%I x
                      WINDOW w AS (PARTITION BY x.event_id ORDER BY x.ordinal)) s) r
       GROUP BY r.event_id, r.run, r.device_id, r.filed_at, r.device_time, r.server_time$copy$,
      left(part.name || '_per_reading', 63));
    IF position('_before_' IN part.name) > 0 THEN
      EXECUTE format('CREATE INDEX ON public.%I USING brin (filed_at)', part.name);
    END IF;
  END LOOP;
  CREATE INDEX telemetry_raw_instants ON public.telemetry_raw (device_id, filed_at);
  SELECT coalesce(max(applied), 0) + 1 INTO next_applied FROM public.telemetry_raw;
  EXECUTE format('ALTER TABLE public.telemetry_raw ALTER COLUMN applied RESTART WITH %s', next_applied);
  DROP TABLE public.telemetry_raw_per_reading;
  PERFORM set_config('TimeZone', zone, true);
  PERFORM set_config('DateStyle', style, true);
END
$$;
