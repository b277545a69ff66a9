-- Telemetry read model (docs/telemetry.md). Every reading lands in telemetry_raw once and is folded into the
-- buckets: pre-aggregated at write time, so a query never scans raw readings. "Once" is kept by
-- telemetry_applied, the position of the last event applied, written in the same statement as the rows: an
-- event at or before it (a replay) is skipped as a whole. One row per projector name: each partition of a
-- partitioned projector (docs/deployment.md) keeps its own. (Until migration 0301 a primary key over the
-- event and the reading's place in it did that, at a unique check per reading.)
-- Every table is partitioned by time (time-partitions.ts): a partition per UTC day (raw, 1m), month (1h) or
-- year (1d), created ahead by the scheduler or by the projector when a batch needs it. Retention drops whole
-- partitions instead of deleting rows (retention.ts).

-- One row per instant of a message: neighbouring readings of one ReadingsRecorded event that are filed at
-- the same time with the same device time (nearly always all of a message's readings), their capabilities
-- and values side by side in message order. Per reading, a row and an index entry cost about as much as the
-- rest of the telemetry projector together; a hub reports several capabilities at once, so this keeps a
-- third of them at three readings a message (migration 0403, docs/telemetry.md section 5).
CREATE TABLE IF NOT EXISTS telemetry_raw (
  device_id text COLLATE "C" NOT NULL,
  -- The time the readings are filed under: their device time when plausible, else their server time.
  filed_at timestamptz NOT NULL,
  event_id uuid NOT NULL,
  device_time timestamptz,
  server_time timestamptz NOT NULL,
  -- capabilities[i] read reading_values->(i - 1): a catalogue key, and a number, boolean or string.
  capabilities text[] COLLATE "C" NOT NULL,
  reading_values jsonb NOT NULL,
  -- Order of application (the global order): breaks ties between readings filed at the same time.
  applied bigint GENERATED ALWAYS AS IDENTITY
) PARTITION BY RANGE (filed_at);
-- A device's readings in time order: resolution=raw and the recomputation of a counter bucket's increase.
CREATE INDEX IF NOT EXISTS telemetry_raw_instants ON telemetry_raw (device_id, filed_at);

-- One table per stored resolution, same shape. Numbers only: a boolean counts as 1 (true) or 0 (false).
-- increase is kept for counters only: the reset-aware rise between the bucket's own readings.
-- Rows are updated in place batch after batch: each partition is created with free space in its pages
-- (fillfactor 80) so those updates stay HOT.
CREATE TABLE IF NOT EXISTS telemetry_1m (
  device_id text COLLATE "C" NOT NULL,
  capability text COLLATE "C" NOT NULL,
  bucket_start timestamptz NOT NULL,
  samples integer NOT NULL,
  sum double precision NOT NULL,
  min double precision NOT NULL,
  max double precision NOT NULL,
  first_at timestamptz NOT NULL,
  first_value double precision NOT NULL,
  last_at timestamptz NOT NULL,
  last_value double precision NOT NULL,
  increase double precision,
  PRIMARY KEY (device_id, capability, bucket_start)
) PARTITION BY RANGE (bucket_start);

CREATE TABLE IF NOT EXISTS telemetry_1h (LIKE telemetry_1m, PRIMARY KEY (device_id, capability, bucket_start))
  PARTITION BY RANGE (bucket_start);
CREATE TABLE IF NOT EXISTS telemetry_1d (LIKE telemetry_1m, PRIMARY KEY (device_id, capability, bucket_start))
  PARTITION BY RANGE (bucket_start);

-- Minutes whose 1m row is not yet rolled up into telemetry_1h and telemetry_1d (projector.ts: a device's
-- minutes from its batch's rollup cutoff on). A live batch spans a fraction of a second, so an hour's and a
-- day's row upserted with every batch was two thirds of the bucket writes; a minute is rolled up once,
-- when its device's readings have moved past it. Readers merge these minutes into the hours and days they
-- belong to (sql.ts, bucketsAsRead). Unpartitioned and small: about the last two minutes of each series
-- that reports, and the last minutes of one that fell silent. The local day of the minute (and its end)
-- is recorded here, as the site's zone placed it.
CREATE TABLE IF NOT EXISTS telemetry_pending (
  device_id text COLLATE "C" NOT NULL,
  capability text COLLATE "C" NOT NULL,
  bucket_start timestamptz NOT NULL,
  day_start timestamptz NOT NULL,
  day_end timestamptz NOT NULL,
  PRIMARY KEY (device_id, capability, bucket_start)
);

-- rolled_before: the rollup cutoff the partition last used (ms since the epoch); the minutes of its devices
-- before it are rolled up. It never goes back (projector.ts). Added by migration 0405 where the table existed.
CREATE TABLE IF NOT EXISTS telemetry_applied (
  projector text COLLATE "C" PRIMARY KEY,
  position text COLLATE "C" NOT NULL,
  rolled_before bigint
);

-- Site timezones as the telemetry projector saw them (sites never change zone): 1d buckets start at local
-- midnight. Kept here rather than read from the sites read model, so a replay never depends on another
-- projector's progress.
CREATE TABLE IF NOT EXISTS telemetry_site_zones (
  site_id text PRIMARY KEY,
  timezone text NOT NULL
);
