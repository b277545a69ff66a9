-- Pairing windows and their candidates, for GET /v1/pairing/sessions/{id}, the scheduler's deadline sweep
-- and the downlink's resend to a reconnecting agent. Decisions never read these tables: they fold the
-- hub's pairing stream.
CREATE TABLE IF NOT EXISTS pairing_sessions (
  session_id text PRIMARY KEY,
  project_id text NOT NULL,
  hub_id text NOT NULL,
  state text NOT NULL,
  opened_at timestamptz NOT NULL,
  closes_at timestamptz NOT NULL,
  closed_at timestamptz,
  close_reason text
);
CREATE INDEX IF NOT EXISTS pairing_sessions_open ON pairing_sessions (closes_at) WHERE state = 'open';
CREATE INDEX IF NOT EXISTS pairing_sessions_by_hub ON pairing_sessions (hub_id, opened_at);

-- ord numbers candidates in the order they first joined their session.
CREATE TABLE IF NOT EXISTS pairing_candidates (
  session_id text NOT NULL,
  ieee_addr text NOT NULL,
  project_id text NOT NULL,
  hub_id text NOT NULL,
  ord integer NOT NULL,
  manufacturer text NOT NULL,
  product_model text NOT NULL,
  capabilities text[] NOT NULL,
  state text NOT NULL,
  device_id text,
  joined_at timestamptz NOT NULL,
  PRIMARY KEY (session_id, ieee_addr)
);
CREATE INDEX IF NOT EXISTS pairing_candidates_by_hub ON pairing_candidates (hub_id, state);

-- Addresses each hub remembers as rejected (until an operator clears them).
CREATE TABLE IF NOT EXISTS pairing_rejections (
  hub_id text NOT NULL,
  ieee_addr text NOT NULL,
  session_id text NOT NULL,
  PRIMARY KEY (hub_id, ieee_addr)
);
