-- A retired key only verifies, so it keeps only its public part; an emergency revoke (`devcloud keys revoke`)
-- marks a key that must stop verifying at once. Keys retired before this lose their private part now.
ALTER TABLE auth.signing_keys ALTER COLUMN private_jwk DROP NOT NULL;
ALTER TABLE auth.signing_keys ADD COLUMN revoked_at timestamptz;
UPDATE auth.signing_keys SET private_jwk = NULL WHERE retired_at IS NOT NULL;
