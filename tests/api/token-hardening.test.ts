import { clientStream } from '../../src/domain/identity/index.js';
import { expect } from 'chai';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import { clientWithSecret, createTenant, type Tenant } from '../support/tenants.js';

const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };

async function tokenRequest(api: TestApi, clientId: string, clientSecret: string) {
  const response = await fetch(`${api.baseUrl}/v1/oauth/token`, {
    method: 'POST',
    headers: FORM,
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: clientId,
      client_secret: clientSecret,
    }),
    signal: AbortSignal.timeout(20_000),
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Record<string, unknown>,
  };
}

/** A client recorded with a scrypt hash, as every client created before keyed hashes was. */
const legacyClient = async (api: TestApi, secret: string) =>
  (await clientWithSecret(api, secret, 'post', 'scrypt')).clientId;

async function storedHashes(api: TestApi, clientId: string): Promise<string[]> {
  const events = await api.store.readStream(clientStream(clientId));
  return events.map((e) => (e.data as { secretHash?: string }).secretHash).filter((h): h is string => !!h);
}

describe('token endpoint hardening', () => {
  let api: TestApi;
  let tenant: Tenant;
  before(async () => {
    api = await startTestApi();
    tenant = await createTenant(api, ['devices:read']);
  });
  after(async () => {
    await api.close();
  });

  it('GET /v1/oauth/token answers 405 with Allow: POST', async () => {
    const response = await fetch(`${api.baseUrl}/v1/oauth/token`);
    expect(response.status).to.equal(405);
    expect(response.headers.get('allow')).to.equal('POST');
    expect(await response.json()).to.deep.equal({ error: 'method_not_allowed' });
  });

  it('records new client secrets as keyed HMAC-SHA-256, never scrypt', async () => {
    const [hash] = await storedHashes(api, tenant.clientId);
    expect(hash).to.match(/^\$hmac-sha256\$k=[A-Za-z0-9_-]+\$[A-Za-z0-9+/]+$/);
    expect((await tokenRequest(api, tenant.clientId, tenant.clientSecret)).status).to.equal(200);
  });

  it('migrates a scrypt hash to the keyed hash on the first successful token request', async () => {
    const clientId = await legacyClient(api, 'dcs_legacy-secret');
    expect(await storedHashes(api, clientId)).to.have.length(1);
    expect((await tokenRequest(api, clientId, 'dcs_wrong')).status).to.equal(401);
    expect(await storedHashes(api, clientId), 'a failure migrates nothing').to.have.length(1);
    expect((await tokenRequest(api, clientId, 'dcs_legacy-secret')).status).to.equal(200);
    const hashes = await storedHashes(api, clientId);
    expect(hashes).to.have.length(2);
    expect(hashes[1]).to.match(/^\$hmac-sha256\$/);
    expect((await tokenRequest(api, clientId, 'dcs_legacy-secret')).status).to.equal(200);
    expect((await tokenRequest(api, clientId, 'dcs_wrong')).status).to.equal(401);
    expect(await storedHashes(api, clientId), 'migrated once').to.have.length(2);
  });

  it('caps concurrent scrypt verifications: the overflow answers 503 with Retry-After at once', async () => {
    const clientId = await legacyClient(api, 'dcs_slow-secret');
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => tokenRequest(api, clientId, `dcs_wrong-${i}`)),
    );
    const statuses = answers.map((a) => a.status);
    const busy = answers.filter((a) => a.status === 503);
    expect(busy.length, statuses.join(',')).to.be.greaterThan(0);
    expect(busy[0]!.headers.get('retry-after')).to.match(/^\d+$/);
    expect(busy[0]!.body).to.deep.equal({ error: 'temporarily_unavailable' });
    expect(
      statuses.every((s) => s === 503 || s === 401 || s === 429),
      statuses.join(','),
    ).to.equal(true);
  });

  it('counts failures per client id: past the limit a wrong secret gets 429, the right one still a token', async () => {
    const victim = await createTenant(api, ['devices:read']);
    const statuses: number[] = [];
    for (let i = 0; i < 15; i++)
      statuses.push((await tokenRequest(api, victim.clientId, `dcs_guess-${i}`)).status);
    expect(statuses.slice(0, 10)).to.deep.equal(Array(10).fill(401));
    expect(statuses.slice(10)).to.deep.equal(Array(5).fill(429));
    const limited = await tokenRequest(api, victim.clientId, 'dcs_guess-again');
    expect(limited.headers.get('retry-after')).to.match(/^\d+$/);
    expect((await tokenRequest(api, victim.clientId, victim.clientSecret)).status).to.equal(200);
    // Another client is not affected.
    expect((await tokenRequest(api, tenant.clientId, 'dcs_wrong')).status).to.equal(401);
  });
});
