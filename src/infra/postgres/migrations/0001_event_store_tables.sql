-- The event store: one row per event, one row per stream holding its current revision.
-- Readers of the global order page by (transaction_id, global_position) and only look at rows whose
-- transaction is older than the oldest running one, so an event committed out of order is never skipped.
CREATE SCHEMA IF NOT EXISTS eventstore;

CREATE TABLE eventstore.streams (
  stream_name text PRIMARY KEY,
  revision bigint NOT NULL
);

CREATE TABLE eventstore.events (
  transaction_id xid8 NOT NULL DEFAULT pg_current_xact_id(),
  global_position bigint GENERATED ALWAYS AS IDENTITY (CACHE 100),
  stream_name text NOT NULL,
  stream_revision bigint NOT NULL,
  event_id uuid NOT NULL,
  event_type text NOT NULL,
  data jsonb NOT NULL,
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (transaction_id, global_position),
  UNIQUE (stream_name, stream_revision),
  UNIQUE (event_id)
);
