-- Edge agents, for the MQTT broker's agent directory (who may connect, for which devices) and the ingress.
CREATE TABLE IF NOT EXISTS agents (
  agent_id text PRIMARY KEY,
  project_id text NOT NULL,
  site_id text NOT NULL,
  hub_id text NOT NULL UNIQUE,
  certificate_serial text,
  revoked boolean NOT NULL DEFAULT false,
  registered_at timestamptz NOT NULL,
  revoked_at timestamptz
);
-- Devices reached through a hub (parent_hub_id): the agent of that hub may publish for them.
CREATE TABLE IF NOT EXISTS agent_devices (
  device_id text PRIMARY KEY,
  hub_id text NOT NULL
);
CREATE INDEX IF NOT EXISTS agent_devices_by_hub ON agent_devices (hub_id);
