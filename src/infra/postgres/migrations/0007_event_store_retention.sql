-- Retention of short-lived events (readings). Deletion walks each type's index in global order, so this
-- records, per event type, the newest position deleted so far: a reader asking to resume from before it
-- has missed events (the live stream reports replay_gap) instead of silently skipping them.
CREATE TABLE eventstore.retention_horizons (
  event_type text PRIMARY KEY,
  transaction_id xid8 NOT NULL,
  global_position bigint NOT NULL,
  -- The cut-off of the last deletion: events of this type recorded before it may be gone.
  recorded_before timestamptz NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
