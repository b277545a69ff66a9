-- The list endpoint's keysets (GET /v1/devices filtered by status, site or model). The projector never reads
-- through them, so a replay builds them once when it ends (see queryIndexSql in ../projector.ts).
CREATE INDEX IF NOT EXISTS devices_by_project ON devices (project_id, seq);
CREATE INDEX IF NOT EXISTS devices_by_status ON devices (project_id, status, seq);
CREATE INDEX IF NOT EXISTS devices_by_site ON devices (project_id, site_id, seq);
CREATE INDEX IF NOT EXISTS devices_by_model ON devices (project_id, product_model, seq);
