-- Devices of every project, for GET /v1/devices and GET /v1/devices/{publicId}.
-- seq is the device's ordinal in the order registrations were projected: 1, 2, 3... with no gaps. It is the
-- keyset of the list cursor, and comes out the same on a rebuild (same events, same order), so a cursor
-- handed out before a rebuild still means the same place.
-- revision is the stream revision of the last event applied to the row; an older event is never re-applied.
-- The radio address is deliberately not kept here: nothing that serves the API may be able to leak it.
CREATE TABLE IF NOT EXISTS devices (
  seq bigint PRIMARY KEY,
  device_id text NOT NULL UNIQUE,
  project_id text NOT NULL,
  site_id text NOT NULL,
  parent_hub_id text,
  kind text NOT NULL,
  manufacturer text NOT NULL,
  product_model text NOT NULL,
  capabilities text[] NOT NULL,
  profile text NOT NULL,
  status text NOT NULL,
  created_at timestamptz NOT NULL,
  revision bigint NOT NULL
);
