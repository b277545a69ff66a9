-- The audit trail: every control-plane event in global order, for auditors who replay grants and commands.
CREATE TABLE IF NOT EXISTS audit_log (
  position text PRIMARY KEY,
  event_id uuid NOT NULL,
  stream_name text NOT NULL,
  stream_revision bigint NOT NULL,
  event_type text NOT NULL,
  recorded_at timestamptz NOT NULL,
  data jsonb NOT NULL,
  metadata jsonb NOT NULL
);
