-- The audit chain (docs/audit.md): one link for every chained event, in the store's global order, and the
-- head of each project's chain. Positions are the store's opaque strings, which sort in global order
-- byte by byte (COLLATE "C"), so the links can be read in the same order as the events they chain.
CREATE TABLE IF NOT EXISTS audit_chain_links (
  position text COLLATE "C" PRIMARY KEY,
  project_id text NOT NULL,
  sequence bigint NOT NULL,
  digest text NOT NULL,
  link text NOT NULL,
  recorded_at timestamptz NOT NULL,
  UNIQUE (project_id, sequence)
);
CREATE TABLE IF NOT EXISTS audit_chain_heads (
  project_id text PRIMARY KEY,
  sequence bigint NOT NULL,
  link text NOT NULL,
  position text COLLATE "C" NOT NULL
);
-- The project of each registered device: a device's lifecycle and profile moves name only the device, and
-- belong to the chain of the project its registration named (domain/audit/chained-events.ts, chainOf).
CREATE TABLE IF NOT EXISTS audit_chain_devices (
  device_id text PRIMARY KEY,
  project_id text NOT NULL
);
