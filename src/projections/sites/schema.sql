-- Sites of every project, for GET /v1/sites.
CREATE TABLE IF NOT EXISTS sites (
  site_id text PRIMARY KEY,
  project_id text NOT NULL,
  name text NOT NULL,
  timezone text NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS sites_by_project ON sites (project_id, created_at, site_id);
