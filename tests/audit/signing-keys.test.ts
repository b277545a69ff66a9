import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { expect } from 'chai';
import sinon from 'sinon';
import {
  activeAuditSigner,
  auditKeyId,
  auditPublicKeys,
  rotateAuditKeys,
  signatureCheck,
} from '../../src/audit/signing-keys.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';

type Query = (
  text: string | { text: string },
  values?: unknown[],
) => Promise<{ rows: unknown[]; rowCount: number | null }>;

describe('audit signing keys', () => {
  let db: TestDatabase;
  beforeEach(async () => {
    db = await freshDatabase();
  });
  afterEach(async () => {
    sinon.restore();
    await db.drop();
  });

  const keyRows = async () =>
    (
      await db.pool.query<{
        key_id: string;
        private_key: string | null;
        public_key: string;
        retired_at: Date | null;
      }>(
        'SELECT key_id, private_key::text AS private_key, public_key, retired_at FROM audit.signing_keys ORDER BY created_at',
      )
    ).rows;

  it('makes exactly one key when first uses race', async () => {
    const racers = 6;
    const original = db.pool.query.bind(db.pool) as unknown as Query;
    // Every racer's first look finds no key before any of them inserts one: they overlap for sure.
    let firstLooks = 0;
    const emptyLooks: number[] = [];
    let allLooked!: () => void;
    const looked = new Promise<void>((resolve) => (allLooked = resolve));
    const inserted: number[] = [];
    sinon.stub(db.pool, 'query').callsFake((async (text: string | { text: string }, values?: unknown[]) => {
      const sql = typeof text === 'string' ? text : text.text;
      const result = await original(text, values);
      if (sql.includes('WHERE retired_at IS NULL') && sql.startsWith('SELECT') && firstLooks < racers) {
        firstLooks++;
        emptyLooks.push(result.rows.length);
        if (firstLooks === racers) allLooked();
        await looked;
      }
      if (sql.includes('ON CONFLICT DO NOTHING')) inserted.push(result.rowCount ?? 0);
      return result;
    }) as never);

    const signers = await Promise.all(Array.from({ length: racers }, () => activeAuditSigner(db.pool)));
    expect(emptyLooks, 'every racer first found no key').to.deep.equal(Array(racers).fill(0));
    expect(inserted, 'every racer tried to make one; one insert won').to.have.length(racers);
    expect(inserted.reduce((a, b) => a + b, 0)).to.equal(1);
    const rows = await keyRows();
    expect(rows).to.have.length(1);
    expect(new Set(signers.map((s) => s.keyId))).to.deep.equal(new Set([rows[0]!.key_id]));
  });

  it('rotation retires the old key: its private part dropped, its public part kept and still verifying', async () => {
    const old = await activeAuditSigner(db.pool);
    const signature = old.sign('["payload"]');
    const rotation = await rotateAuditKeys(db.pool);
    expect(rotation.retired).to.deep.equal([old.keyId]);
    expect(rotation.keyId).not.to.equal(old.keyId);

    const rows = await keyRows();
    expect(rows.map((r) => [r.key_id, r.private_key === null, r.retired_at !== null])).to.deep.equal([
      [old.keyId, true, true],
      [rotation.keyId, false, false],
    ]);
    expect((await activeAuditSigner(db.pool)).keyId).to.equal(rotation.keyId);
    const keys = await auditPublicKeys(db.pool);
    expect(keys.map((k) => [k.keyId, k.retiredAt !== null])).to.deep.equal([
      [old.keyId, true],
      [rotation.keyId, false],
    ]);
    expect(signatureCheck(keys)(old.keyId, '["payload"]', signature)).to.equal('valid');
  });

  it('stores private keys sealed under AUDIT_SIGNING_KEY_ENCRYPTION_KEY, and names it when it does not open them', async () => {
    const encryptionKey = randomBytes(32).toString('base64');
    const signer = await activeAuditSigner(db.pool, encryptionKey);
    const [row] = await keyRows();
    expect(row!.private_key).not.to.match(/PRIVATE KEY|MC4CAQAw/);
    expect(JSON.parse(row!.private_key!)).to.have.keys('alg', 'iv', 'tag', 'ciphertext');

    const again = await activeAuditSigner(db.pool, encryptionKey);
    expect(again.keyId).to.equal(signer.keyId);
    expect(signatureCheck(await auditPublicKeys(db.pool))(again.keyId, 'x', again.sign('x'))).to.equal(
      'valid',
    );

    const wrong = randomBytes(32).toString('base64');
    const failure = await activeAuditSigner(db.pool, wrong).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(failure?.message).to.match(/AUDIT_SIGNING_KEY_ENCRYPTION_KEY/);
    const unset = await activeAuditSigner(db.pool).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(unset?.message).to.match(/set AUDIT_SIGNING_KEY_ENCRYPTION_KEY/);

    // Without the setting the key is stored in clear: the contrast that shows the sealing above is real.
    await rotateAuditKeys(db.pool);
    expect((await keyRows()).at(-1)!.private_key).to.match(/PRIVATE KEY/);
  });

  it('checks signatures: ours valid; an altered payload, an unknown key and a planted row are refused', async () => {
    const signer = await activeAuditSigner(db.pool);
    const payload = '["devcloud-audit-checkpoint/1","prj_1",0]';
    const signature = signer.sign(payload);

    // A key planted in the table under an id that is not its fingerprint, signing what its planter wants.
    const planted = generateKeyPairSync('ed25519');
    const plantedId = signer.keyId.replace(/^./, (c) => (c === '0' ? '1' : '0'));
    await db.pool.query(
      `INSERT INTO audit.signing_keys (key_id, algorithm, public_key, retired_at) VALUES ($1, 'Ed25519', $2, now())`,
      [plantedId, planted.publicKey.export({ type: 'spki', format: 'pem' })],
    );
    await db.pool.query(
      `INSERT INTO audit.signing_keys (key_id, algorithm, public_key, retired_at) VALUES ('garbage', 'Ed25519', 'not a key', now())`,
    );
    const keys = await auditPublicKeys(db.pool);
    expect(
      keys.map((k) => k.keyId),
      'the rows were planted',
    ).to.include.members([plantedId, 'garbage']);
    expect(auditKeyId(planted.publicKey)).not.to.equal(plantedId);

    const check = signatureCheck(keys);
    expect(check(signer.keyId, payload, signature)).to.equal('valid');
    expect(check(signer.keyId, payload.replace('prj_1', 'prj_2'), signature)).to.equal('invalid');
    expect(check('0'.repeat(32), payload, signature)).to.equal('unknown_key');
    const forged = sign(null, Buffer.from(payload), planted.privateKey).toString('base64url');
    expect(check(plantedId, payload, forged)).to.equal('unknown_key');
    expect(check('garbage', payload, forged)).to.equal('unknown_key');

    // Planted under its own fingerprint it passes the database's trust: an auditor's recorded keys refuse it.
    const honest = auditKeyId(planted.publicKey);
    const pem = planted.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    expect(signatureCheck([...keys, { keyId: honest, publicKey: pem }])(honest, payload, forged)).to.equal(
      'valid',
    );
    expect(signatureCheck(keys.filter((k) => k.keyId === signer.keyId))(honest, payload, forged)).to.equal(
      'unknown_key',
    );
  });
});
