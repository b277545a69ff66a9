-- Write grants per (device, capability), for GET /v1/devices/{publicId}/capability-grants. state is denied
-- (the explicit denial adoption records), granted or revoked. changed_by is the actor of the last change
-- (null for the adoption default); changed_at its time (the recording time for the adoption default).
-- revision is the device stream revision of the last event applied; an older event is never re-applied.
CREATE TABLE IF NOT EXISTS capability_grants (
  device_id text NOT NULL,
  capability text NOT NULL,
  project_id text NOT NULL,
  state text NOT NULL,
  changed_by jsonb,
  changed_at timestamptz NOT NULL,
  revision bigint NOT NULL,
  PRIMARY KEY (device_id, capability)
);
