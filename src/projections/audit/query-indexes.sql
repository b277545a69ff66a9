-- The audit queries' ways in (one stream's history; one event type over time). The projector never reads
-- through them, so a replay builds them once when it ends (see queryIndexSql in ../projector.ts).
CREATE INDEX IF NOT EXISTS audit_log_stream ON audit_log (stream_name, stream_revision);
CREATE INDEX IF NOT EXISTS audit_log_type_time ON audit_log (event_type, recorded_at);
