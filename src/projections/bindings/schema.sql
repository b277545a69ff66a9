-- Bindings of every project, for GET /v1/bindings. Many devices may bind to one resource.
CREATE TABLE IF NOT EXISTS bindings (
  binding_id text PRIMARY KEY,
  project_id text NOT NULL,
  device_id text NOT NULL,
  resource_type text NOT NULL,
  resource_id text NOT NULL,
  channel_mapping jsonb NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS bindings_by_project ON bindings (project_id, created_at, binding_id);
