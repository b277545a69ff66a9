-- Commands of every project, for GET /v1/commands/{commandId} and GET /v1/devices/{publicId}/commands.
-- seq numbers commands in the order their acceptances were projected: 1, 2, 3... with no gaps, the same on
-- a rebuild; it is the keyset of the list cursor. status follows the command's events: queued, sent, then
-- one final status that never changes again. outcome holds how it ended (reason, detail, supersededBy).
CREATE TABLE IF NOT EXISTS commands (
  seq bigint PRIMARY KEY,
  command_id text NOT NULL UNIQUE,
  project_id text NOT NULL,
  device_id text NOT NULL,
  capability text NOT NULL,
  value jsonb NOT NULL,
  mode text NOT NULL,
  ttl_seconds integer NOT NULL,
  status text NOT NULL,
  accepted_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  attempts integer NOT NULL,
  outcome jsonb
);
