-- The telemetry tables become partitioned by time, so retention drops whole partitions instead of deleting
-- rows (src/projections/telemetry/time-partitions.ts). The read model outlives its events, so this is a
-- migration, not a rebuild: each existing table is kept whole as the first partition,
-- <table>_before_<YYYYMMDD>, holding everything before the end of the current day (month, year) or of its
-- newest row, whichever is later; later rows go to regular partitions from there on. Retention deletes that
-- partition's expired rows in batches, as before, until the whole of it has expired and it is dropped.
-- Nothing to do where the projector has not created its tables yet (its schema.sql has the partitioned
-- shape) or where they are partitioned already.
DO $$
DECLARE
  target record;
  newest timestamptz;
  bound timestamp;
  legacy text;
  item record;
  next_applied bigint;
BEGIN
  FOR target IN
    SELECT * FROM (VALUES ('telemetry_raw', 'filed_at', 'day'), ('telemetry_1m', 'bucket_start', 'day'),
                          ('telemetry_1h', 'bucket_start', 'month'), ('telemetry_1d', 'bucket_start', 'year'))
             AS t(name, column_name, span)
  LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_class c
                    WHERE c.oid = to_regclass('public.' || target.name) AND c.relkind = 'r') THEN
      CONTINUE;
    END IF;
    EXECUTE format('SELECT max(%I) FROM public.%I', target.column_name, target.name) INTO newest;
    bound := date_trunc(target.span, greatest(now(), newest) AT TIME ZONE 'UTC')
             + ('1 ' || target.span)::interval;
    legacy := target.name || '_before_' || to_char(bound, 'YYYYMMDD');
    EXECUTE format('ALTER TABLE public.%I RENAME TO %I', target.name, legacy);
    -- Free the names of the indexes (and so of the primary key) for the partitioned table's own.
    FOR item IN
      SELECT i.relname AS name FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
       WHERE x.indrelid = ('public.' || legacy)::regclass AND left(i.relname, length(target.name)) = target.name
    LOOP
      EXECUTE format('ALTER INDEX public.%I RENAME TO %I', item.name,
                     left(legacy || substr(item.name, length(target.name) + 1), 63));
    END LOOP;
    EXECUTE format('CREATE TABLE public.%I (LIKE public.%I) PARTITION BY RANGE (%I)',
                   target.name, legacy, target.column_name);
    IF target.name = 'telemetry_raw' THEN
      -- Only the partitioned table hands out the order of application; it goes on from the largest given.
      EXECUTE format('SELECT coalesce(max(applied), 0) + 1 FROM public.%I', legacy) INTO next_applied;
      EXECUTE format('ALTER TABLE public.%I ALTER COLUMN applied DROP IDENTITY', legacy);
      EXECUTE format('ALTER TABLE public.telemetry_raw ALTER COLUMN applied ADD GENERATED ALWAYS AS IDENTITY '
                     '(START WITH %s)', next_applied);
      CREATE INDEX telemetry_raw_series ON public.telemetry_raw (device_id, capability, filed_at);
    ELSE
      EXECUTE format('ALTER TABLE public.%I ADD PRIMARY KEY (device_id, capability, bucket_start)', target.name);
    END IF;
    EXECUTE format('ALTER TABLE public.%I ATTACH PARTITION public.%I FOR VALUES FROM (MINVALUE) TO (%L)',
                   target.name, legacy, to_char(bound, 'YYYY-MM-DD"T"HH24:MI:SS"Z"'));
  END LOOP;
END
$$;
