-- A device's command history, all or by status. The projector finds commands by id only, so a replay builds
-- these once when it ends (see queryIndexSql in ../projector.ts).
CREATE INDEX IF NOT EXISTS commands_by_device ON commands (project_id, device_id, seq);
CREATE INDEX IF NOT EXISTS commands_by_device_status ON commands (project_id, device_id, status, seq);
