-- Where each projector has got to in the global order, and which version of its read model is installed.
CREATE SCHEMA IF NOT EXISTS projection;

CREATE TABLE projection.checkpoints (
  projector text PRIMARY KEY,
  position text,
  version int NOT NULL,
  events_applied bigint NOT NULL DEFAULT 0,
  updated_at timestamptz NOT NULL DEFAULT now()
);
