-- Each partition of the telemetry projector (docs/deployment.md) skips replays by its own applied position,
-- so telemetry_applied is keyed by the projector's name instead of holding one row. The existing row was
-- written by the one unpartitioned projector, named 'telemetry'. Nothing to do where the projector has not
-- created its tables yet, or where they already have the new shape.
DO $$
BEGIN
  IF to_regclass('public.telemetry_applied') IS NULL OR NOT EXISTS (
    SELECT 1 FROM information_schema.columns
     WHERE table_schema = 'public' AND table_name = 'telemetry_applied' AND column_name = 'singleton'
  ) THEN
    RETURN;
  END IF;
  ALTER TABLE public.telemetry_applied ADD COLUMN projector text COLLATE "C" NOT NULL DEFAULT 'telemetry';
  ALTER TABLE public.telemetry_applied DROP CONSTRAINT telemetry_applied_pkey;
  ALTER TABLE public.telemetry_applied DROP COLUMN singleton;
  ALTER TABLE public.telemetry_applied ALTER COLUMN projector DROP DEFAULT;
  ALTER TABLE public.telemetry_applied ADD PRIMARY KEY (projector);
END
$$;
