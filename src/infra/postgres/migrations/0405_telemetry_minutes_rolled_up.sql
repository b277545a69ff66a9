-- Hours and days are rolled up from minutes once their device's readings have moved past them, instead of
-- being upserted with every batch (src/projections/telemetry/schema.sql, telemetry_pending). Each partition
-- of the projector records the cutoff it last rolled up to. Where the projector has created its tables
-- already, its applied positions gain the column; the new table comes with the projector's schema. Rows of
-- the read model from before were folded into their hours and days as they were written: none is pending.
ALTER TABLE IF EXISTS public.telemetry_applied ADD COLUMN IF NOT EXISTS rolled_before bigint;
