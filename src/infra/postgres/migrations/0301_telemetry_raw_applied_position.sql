-- telemetry_raw loses its five-column primary key (a unique check per reading, ~18 us of the ~25 us a raw
-- row cost) for a plain index over each device's series; replays are skipped by the position of the last
-- event applied instead (telemetry_applied), which starts at the projector's checkpoint: everything up to
-- it is in the tables. The telemetry read model outlives its events, so this is a migration, not a
-- rebuild. Nothing to do where the projector has not created its tables yet (its schema.sql has the new
-- shape).
DO $$
BEGIN
  IF to_regclass('public.telemetry_raw') IS NULL THEN
    RETURN;
  END IF;
  CREATE INDEX IF NOT EXISTS telemetry_raw_series ON public.telemetry_raw (device_id, capability, filed_at);
  ALTER TABLE public.telemetry_raw DROP CONSTRAINT IF EXISTS telemetry_raw_pkey;
  CREATE TABLE IF NOT EXISTS public.telemetry_applied (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    position text COLLATE "C" NOT NULL
  );
  INSERT INTO public.telemetry_applied (singleton, position)
  SELECT true, c.position FROM projection.checkpoints c
   WHERE c.projector = 'telemetry' AND c.position IS NOT NULL
  ON CONFLICT (singleton) DO NOTHING;
END
$$;
