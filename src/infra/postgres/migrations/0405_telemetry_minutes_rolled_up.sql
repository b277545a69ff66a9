-- Hours and days are rolled up from minutes once their device's readings have moved past them, instead of
-- being upserted with every batch (src/projections/telemetry/schema.sql, telemetry_pending). Each partition
-- of the projector records the cutoff it last rolled up to; the new table comes with the projector's schema.
--
-- Where the projector has written minutes already, each of them is in its hour and day. A batch lists a
-- minute as pending only when it creates it, so the first cutoff must lie past every minute written before
-- this migration: readings that come later for such a minute then go to its hour and day at once, as they
-- always did, instead of waiting in a minute nobody lists (or being counted twice). The newest minute is in
-- the newest partition that holds any (names sort by day; a converted table's first partition is oldest).
DO $$
DECLARE
  part record;
  newest timestamptz;
BEGIN
  IF to_regclass('public.telemetry_applied') IS NULL THEN
    RETURN;
  END IF;
  ALTER TABLE public.telemetry_applied ADD COLUMN IF NOT EXISTS rolled_before bigint;
  IF to_regclass('public.telemetry_1m') IS NULL THEN
    RETURN;
  END IF;
  FOR part IN
    SELECT c.relname
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'public.telemetry_1m'::regclass
     ORDER BY c.relname ~ '_[0-9]{8}$' DESC, c.relname DESC
  LOOP
    EXECUTE format('SELECT max(bucket_start) FROM public.%I', part.relname) INTO newest;
    EXIT WHEN newest IS NOT NULL;
  END LOOP;
  IF newest IS NOT NULL THEN
    UPDATE public.telemetry_applied
       SET rolled_before = (extract(epoch FROM newest) * 1000)::bigint + 60000
     WHERE rolled_before IS NULL;
  END IF;
END
$$;
