-- The keys that sign access tokens. They are infrastructure, not domain facts: a private key must never sit
-- in the event store, which auditors replay and which is kept for ever. Exactly one key signs (retired_at
-- IS NULL); a retired key keeps verifying until every token it signed has expired, then may be deleted.
CREATE SCHEMA IF NOT EXISTS auth;

CREATE TABLE auth.signing_keys (
  kid text PRIMARY KEY,
  algorithm text NOT NULL,
  private_jwk jsonb NOT NULL,
  public_jwk jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  retired_at timestamptz
);

-- At most one signing key: concurrent first uses race on this index and exactly one insert wins.
CREATE UNIQUE INDEX signing_keys_one_active ON auth.signing_keys ((true)) WHERE retired_at IS NULL;
