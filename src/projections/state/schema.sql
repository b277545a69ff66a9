-- The latest reading of each capability of each device, for GET /v1/devices/{publicId}/state. A row only
-- moves to a reading with a later (or equal, i.e. later in the global order) server time, so replays and
-- device clocks that run backwards never regress it. unit is the catalogue's unit when the reading was
-- projected; quality markers are computed when the state is read.
CREATE TABLE IF NOT EXISTS device_state (
  device_id text NOT NULL,
  capability text NOT NULL,
  value jsonb NOT NULL,
  unit text NOT NULL,
  device_time timestamptz,
  server_time timestamptz NOT NULL,
  PRIMARY KEY (device_id, capability)
);

-- Connectivity as last observed (null until a DeviceConnectivityChanged arrives) and the last contact:
-- the newest reading's server time or an observation that the device was online.
CREATE TABLE IF NOT EXISTS device_presence (
  device_id text PRIMARY KEY,
  connectivity text,
  connectivity_at timestamptz,
  last_seen_at timestamptz
);
