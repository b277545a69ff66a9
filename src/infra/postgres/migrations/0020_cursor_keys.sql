-- Server-side secrets that seal the API's list cursors, so a client can neither read nor forge one.
-- Each row is created by the first API instance that needs it (INSERT ... ON CONFLICT DO NOTHING) and
-- shared by all instances, so a cursor from one instance works on every other one and across restarts.
CREATE TABLE public.cursor_keys (
  name text PRIMARY KEY,
  secret bytea NOT NULL CHECK (octet_length(secret) = 32),
  created_at timestamptz NOT NULL DEFAULT now()
);
