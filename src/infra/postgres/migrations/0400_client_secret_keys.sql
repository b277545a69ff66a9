-- The keys of the HMAC-SHA-256 that client secrets are recorded under. Infrastructure, like the signing keys:
-- never in the event store, which auditors replay and which keeps every ClientCreated for ever, so a copy of
-- the events alone cannot even confirm a guessed secret. A stored hash names its key (`k=`), so a new key can
-- be added later without invalidating the secrets recorded under an older one.
CREATE SCHEMA IF NOT EXISTS auth;

CREATE TABLE auth.client_secret_keys (
  key_id text PRIMARY KEY,
  key bytea NOT NULL CHECK (octet_length(key) >= 32),
  created_at timestamptz NOT NULL DEFAULT now()
);
