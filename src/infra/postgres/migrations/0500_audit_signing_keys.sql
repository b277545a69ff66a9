-- The keys that sign the audit chain's checkpoints (docs/audit.md). Kept apart from the keys that sign
-- access tokens (auth.signing_keys): another schema, another algorithm (Ed25519), another encryption key
-- (AUDIT_SIGNING_KEY_ENCRYPTION_KEY), and another life: a token key is deleted once its tokens expired, an
-- audit key's public part is kept for ever, since every checkpoint it signed must stay verifiable.
CREATE SCHEMA IF NOT EXISTS audit;

CREATE TABLE audit.signing_keys (
  key_id text PRIMARY KEY,
  algorithm text NOT NULL CHECK (algorithm = 'Ed25519'),
  -- SPKI, PEM.
  public_key text NOT NULL,
  -- PKCS#8 PEM as a JSON string, or sealed (infra/sealed-secret.ts); NULL once the key is retired.
  private_key json,
  created_at timestamptz NOT NULL DEFAULT now(),
  retired_at timestamptz
);

-- Exactly one key signs: concurrent first uses race on this index and one insert wins.
CREATE UNIQUE INDEX signing_keys_one_active ON audit.signing_keys ((true)) WHERE retired_at IS NULL;

-- Where each project's newest checkpoint is, so the checkpoint job reads one event of its stream instead of
-- all of them. A hint only: the stream decides (an append at the wrong revision is refused and re-read).
CREATE TABLE audit.checkpoint_marks (
  project_id text PRIMARY KEY,
  sequence bigint NOT NULL,
  -- How many chained events that checkpoint covers: a head no further needs no new checkpoint.
  count bigint NOT NULL
);
