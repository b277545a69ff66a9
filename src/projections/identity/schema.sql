-- Projects and OAuth clients as operators list them. No secret and no secret hash is kept here: the token
-- endpoint checks credentials against the client's own event stream, never against this read model.
CREATE TABLE IF NOT EXISTS projects (
  project_id text PRIMARY KEY,
  name text NOT NULL,
  created_at timestamptz NOT NULL
);

CREATE TABLE IF NOT EXISTS oauth_clients (
  client_id text PRIMARY KEY,
  project_id text NOT NULL,
  name text,
  scopes text[] NOT NULL,
  auth_method text NOT NULL,
  created_at timestamptz NOT NULL,
  revoked_at timestamptz
);
CREATE INDEX IF NOT EXISTS oauth_clients_project ON oauth_clients (project_id, created_at);
CREATE INDEX IF NOT EXISTS oauth_clients_revoked ON oauth_clients (revoked_at) WHERE revoked_at IS NOT NULL;
