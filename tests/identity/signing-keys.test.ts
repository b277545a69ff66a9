import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { AccessTokens } from '../../src/identity/access-tokens.js';
import { revokeSigningKey, rotateSigningKeys, SigningKeys } from '../../src/identity/signing-keys.js';
import { hashSecret, verifySecret } from '../../src/identity/secret-hash.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';

const ISSUER = 'https://api.example.test';
const subject = {
  clientId: 'cli_AAAAAAAAAAAAAAAAAAAAAA',
  projectId: 'prj_BBBBBBBBBBBBBBBBBBBBBB',
  scopes: ['devices:read'],
} as const;

describe('signing keys', () => {
  let db: TestDatabase;
  beforeEach(async () => {
    db = await freshDatabase();
  });
  afterEach(async () => {
    await db.drop();
  });

  const count = async () =>
    Number((await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM auth.signing_keys')).rows[0]!.n);

  it('are created on first use exactly once, however many servers race for it', async () => {
    const servers = Array.from({ length: 8 }, () => new SigningKeys(db.pool));
    const kids = await Promise.all(servers.map(async (s) => (await s.signingKey()).kid));
    expect(new Set(kids).size).to.equal(1);
    expect(await count()).to.equal(1);
  });

  it('persist: a new process verifies what an old one signed', async () => {
    const { token } = await new AccessTokens(new SigningKeys(db.pool), ISSUER).issue(subject);
    const verified = await new AccessTokens(new SigningKeys(db.pool), ISSUER).verify(token);
    expect(verified).to.include({ clientId: subject.clientId, projectId: subject.projectId });
  });

  it('rotation retires the signing key, keeps it verifying for a token lifetime, then prunes it', async () => {
    let now = Date.now();
    const keys = new SigningKeys(db.pool, { now: () => now });
    const tokens = new AccessTokens(keys, ISSUER, () => now);
    const { token: old } = await tokens.issue(subject);
    const first = await rotateSigningKeys(db.pool);
    now += 60_000; // past the cache refresh
    expect((await keys.signingKey()).kid).to.equal(first.kid);
    expect(await tokens.verify(old)).to.not.equal(undefined);
    expect(await new AccessTokens(new SigningKeys(db.pool), ISSUER).verify(old)).to.not.equal(undefined);

    // Pretend the first key retired two hours ago: it no longer verifies, and the next rotation deletes it.
    await db.pool.query(
      `UPDATE auth.signing_keys SET retired_at = now() - interval '2 hours' WHERE kid <> $1`,
      [first.kid],
    );
    const freshVerifier = () => new AccessTokens(new SigningKeys(db.pool), ISSUER);
    expect(await freshVerifier().verify(old)).to.equal(undefined);
    const second = await rotateSigningKeys(db.pool);
    expect(second.retired).to.deep.equal([first.kid]);
    expect(second.pruned).to.have.length(1);
    expect(await count()).to.equal(2);
  });

  it('concurrent rotations leave exactly one signing key', async () => {
    await new SigningKeys(db.pool).signingKey();
    await Promise.all(Array.from({ length: 5 }, () => rotateSigningKeys(db.pool)));
    const { rows } = await db.pool.query('SELECT kid FROM auth.signing_keys WHERE retired_at IS NULL');
    expect(rows).to.have.length(1);
    expect(await count()).to.equal(6);
  });
});

describe('signing keys: retirement, emergency revoke, encryption at rest', () => {
  let db: TestDatabase;
  beforeEach(async () => {
    db = await freshDatabase();
  });
  afterEach(async () => {
    await db.drop();
  });
  const privateParts = async () =>
    (
      await db.pool.query<{ kid: string; private_jwk: Record<string, unknown> | null }>(
        'SELECT kid, private_jwk FROM auth.signing_keys ORDER BY created_at',
      )
    ).rows;

  it('a retired key keeps only its public part', async () => {
    await new SigningKeys(db.pool).signingKey();
    const { retired } = await rotateSigningKeys(db.pool);
    const rows = await privateParts();
    expect(rows.find((r) => r.kid === retired[0])!.private_jwk).to.equal(null);
    expect(rows.filter((r) => r.private_jwk !== null)).to.have.length(1);
  });

  it('a revoked key stops verifying within the cache refresh, and a new key signs', async () => {
    let now = Date.now();
    const keys = new SigningKeys(db.pool, { now: () => now });
    const tokens = new AccessTokens(keys, ISSUER, () => now);
    const { token } = await tokens.issue(subject);
    const { kid } = await keys.signingKey();
    expect(await tokens.verify(token)).to.not.equal(undefined);
    expect(await revokeSigningKey(db.pool, kid)).to.deep.equal({ kid, revoked: true });
    now += 10_001;
    expect(await tokens.verify(token), 'revoked within one refresh').to.equal(undefined);
    const { token: fresh } = await tokens.issue(subject);
    expect((await keys.signingKey()).kid).not.to.equal(kid);
    expect(await tokens.verify(fresh)).to.not.equal(undefined);
    expect((await privateParts()).find((r) => r.kid === kid)!.private_jwk).to.equal(null);
    expect(await revokeSigningKey(db.pool, 'no-such-kid')).to.deep.equal({
      kid: 'no-such-kid',
      revoked: false,
    });
  });

  it('with an encryption key, private keys are stored encrypted and still sign', async () => {
    const secret = randomBytes(32).toString('base64');
    const keys = new SigningKeys(db.pool, { encryptionKey: secret });
    const { token } = await new AccessTokens(keys, ISSUER).issue(subject);
    const [row] = await privateParts();
    expect(row!.private_jwk).to.have.property('ciphertext');
    expect(row!.private_jwk).not.to.have.property('d'); // the EC private scalar is nowhere in clear
    expect(
      await new AccessTokens(new SigningKeys(db.pool, { encryptionKey: secret }), ISSUER).verify(token),
    ).to.not.equal(undefined);
    const rotated = await rotateSigningKeys(db.pool, secret);
    const signer = new SigningKeys(db.pool, { encryptionKey: secret });
    expect((await signer.signingKey()).kid).to.equal(rotated.kid);
    const wrong = new SigningKeys(db.pool, { encryptionKey: randomBytes(32).toString('base64') });
    let refused: unknown;
    await wrong.signingKey().catch((e: unknown) => (refused = e));
    expect(refused, 'another key cannot decrypt').to.be.instanceOf(Error);
  });
});

describe('legacy client secret hashes', () => {
  it('are salted scrypt in PHC form and verify only the right secret', async () => {
    const hash = await hashSecret('dcs_right');
    expect(hash).to.match(/^\$scrypt\$ln=15,r=8,p=1\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$/);
    expect(hash).not.to.contain('dcs_right');
    expect(await hashSecret('dcs_right')).not.to.equal(hash);
    expect(await verifySecret('dcs_right', hash)).to.equal(true);
    expect(await verifySecret('dcs_wrong', hash)).to.equal(false);
    expect(await verifySecret('dcs_right', 'not a hash')).to.equal(false);
    expect(await verifySecret('dcs_right', hash.replace('ln=15', 'ln=30'))).to.equal(false);
  });
});
