import type { Server } from 'node:http';
import { expect } from 'chai';
import express from 'express';
import {
  base64url,
  decodeProtectedHeader,
  generateKeyPair,
  importJWK,
  SignJWT,
  type CryptoKey,
  type JWK,
} from 'jose';
import { createApiApp } from '../../src/api/app.js';
import { createApiAuth, requireScope } from '../../src/api/auth/index.js';
import { errorHandler } from '../../src/api/http-errors.js';
import { revokeClient } from '../../src/identity/clients.js';
import { rotateSigningKeys } from '../../src/identity/signing-keys.js';
import { createLogger } from '../../src/infra/logger.js';
import { createMetrics } from '../../src/infra/metrics.js';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import { authHeader, createTenant, type Tenant } from '../support/tenants.js';

const HOUR = 3600_000;

/** An app instance of our own on the suite's database, as a second server or a restarted one would be. */
async function listen(app: express.Express): Promise<{ baseUrl: string; close(): Promise<void> }> {
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function anotherInstance(api: TestApi, now?: () => number) {
  return listen(
    createApiApp({
      config: api.config,
      logger: createLogger('silent'),
      metrics: createMetrics(),
      pool: api.db.pool,
      store: api.store,
      now,
    }),
  );
}

async function call(baseUrl: string, path: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${baseUrl}${path}`, { headers, signal: AbortSignal.timeout(10_000) });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** Reaches a route behind authentication; 404 means authenticated (no such route), 401 means not. */
const PROBE = '/v1/auth-probe';

async function expectAccepted(baseUrl: string, token: string) {
  const answer = await call(baseUrl, PROBE, authHeader(token));
  expect(answer.status, answer.text).to.equal(404);
}

async function expectRejected(baseUrl: string, headers: Record<string, string>) {
  const answer = await call(baseUrl, PROBE, headers);
  expect(answer.status).to.equal(401);
  expect(answer.text).to.equal('{"error":"unauthorized"}');
  expect(answer.headers.get('www-authenticate')).to.match(/^Bearer realm="device-cloud"/);
}

/** The server's current signing key, read the way only an insider could, to forge precisely one flaw. */
async function currentSigningKey(api: TestApi): Promise<{ kid: string; key: CryptoKey }> {
  const { rows } = await api.db.pool.query<{ kid: string; private_jwk: JWK }>(
    'SELECT kid, private_jwk FROM auth.signing_keys WHERE retired_at IS NULL',
  );
  return { kid: rows[0]!.kid, key: (await importJWK(rows[0]!.private_jwk, 'ES256')) as CryptoKey };
}

function claimsFor(api: TestApi, tenant: Tenant, nowSeconds = Math.floor(Date.now() / 1000)) {
  return {
    iss: api.config.PUBLIC_BASE_URL,
    aud: 'device-cloud-api',
    sub: tenant.clientId,
    client_id: tenant.clientId,
    project_id: tenant.projectId,
    scope: 'devices:read',
    jti: 'forged-' + Math.random(),
    iat: nowSeconds,
    nbf: nowSeconds,
    exp: nowSeconds + 3600,
  };
}

describe('access tokens', () => {
  let offset = 0;
  const now = () => Date.now() + offset;
  let api: TestApi;
  let tenant: Tenant;
  let token: string;

  before(async () => {
    api = await startTestApi({}, { now });
    tenant = await createTenant(api, ['devices:read', 'catalog:read', 'grants:admin']);
    token = await tenant.token();
  });
  after(async () => {
    await api.close();
  });
  afterEach(() => {
    offset = 0;
  });

  it('a valid token in the Authorization header authenticates', async () => {
    await expectAccepted(api.baseUrl, token);
  });

  it('no token, another scheme, or a malformed header: 401 unauthorized with a Bearer challenge', async () => {
    await expectRejected(api.baseUrl, {});
    await expectRejected(api.baseUrl, { Authorization: `Basic ${Buffer.from('a:b').toString('base64')}` });
    await expectRejected(api.baseUrl, { Authorization: 'Bearer' });
    await expectRejected(api.baseUrl, { Authorization: `Bearer ${token} extra` });
    await expectRejected(api.baseUrl, { Authorization: 'Bearer not.a.jwt' });
  });

  it('a token in the query string never authenticates', async () => {
    const answer = await call(api.baseUrl, `${PROBE}?access_token=${encodeURIComponent(token)}`);
    expect(answer.status).to.equal(401);
    expect(answer.text).to.equal('{"error":"unauthorized"}');
  });

  it('alg none is refused', async () => {
    const { kid } = await currentSigningKey(api);
    const header = base64url.encode(JSON.stringify({ alg: 'none', typ: 'at+jwt', kid }));
    const payload = base64url.encode(JSON.stringify(claimsFor(api, tenant)));
    await expectRejected(api.baseUrl, authHeader(`${header}.${payload}.`));
  });

  it('a token signed by a key that is not ours is refused, even under our kid', async () => {
    const { kid } = await currentSigningKey(api);
    const stranger = await generateKeyPair('ES256');
    const forged = await new SignJWT(claimsFor(api, tenant))
      .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid })
      .sign(stranger.privateKey);
    await expectRejected(api.baseUrl, authHeader(forged));
  });

  it('an HMAC token keyed with our public key is refused (algorithm pinned)', async () => {
    const { rows } = await api.db.pool.query<{ kid: string; public_jwk: JWK }>(
      'SELECT kid, public_jwk FROM auth.signing_keys WHERE retired_at IS NULL',
    );
    const { kid, public_jwk: publicJwk } = rows[0]!;
    const forged = await new SignJWT(claimsFor(api, tenant))
      .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid })
      .sign(new TextEncoder().encode(JSON.stringify(publicJwk)));
    await expectRejected(api.baseUrl, authHeader(forged));
  });

  it('signed by our key, a token is refused for a wrong issuer, audience, type or missing claim', async () => {
    const { kid, key } = await currentSigningKey(api);
    const sign = (claims: Record<string, unknown>, typ = 'at+jwt') =>
      new SignJWT(claims).setProtectedHeader({ alg: 'ES256', typ, kid }).sign(key);
    const good = claimsFor(api, tenant);
    // The control: the same forgery with nothing wrong passes, so each refusal below is for its one flaw.
    await expectAccepted(api.baseUrl, await sign(good));
    await expectRejected(api.baseUrl, authHeader(await sign({ ...good, iss: 'https://elsewhere.example' })));
    await expectRejected(api.baseUrl, authHeader(await sign({ ...good, aud: 'another-api' })));
    await expectRejected(api.baseUrl, authHeader(await sign(good, 'JWT')));
    const { project_id: _dropped, ...noProject } = good;
    await expectRejected(api.baseUrl, authHeader(await sign(noProject)));
    await expectRejected(api.baseUrl, authHeader(await sign({ ...good, scope: 'devices:read root' })));
    await expectRejected(api.baseUrl, authHeader(await sign({ ...good, sub: 'cli_someoneelse0000000' })));
  });

  it('a tampered payload or signature is refused', async () => {
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const claims = JSON.parse(new TextDecoder().decode(base64url.decode(payload))) as Record<string, unknown>;
    const widened = base64url.encode(JSON.stringify({ ...claims, scope: 'devices:read devices:write' }));
    await expectRejected(api.baseUrl, authHeader(`${header}.${widened}.${signature}`));
    const flipped = signature.startsWith('A') ? `B${signature.slice(1)}` : `A${signature.slice(1)}`;
    await expectRejected(api.baseUrl, authHeader(`${header}.${payload}.${flipped}`));
  });

  it('an expired token is refused; one just inside its hour is not', async () => {
    const fresh = await tenant.token();
    offset = HOUR - 10_000;
    await expectAccepted(api.baseUrl, fresh);
    offset = HOUR + 10_000;
    await expectRejected(api.baseUrl, authHeader(fresh));
  });

  it('a token issued in the future (beyond the clock tolerance) is refused', async () => {
    offset = 120_000;
    const early = await tenant.token();
    offset = 0;
    await expectRejected(api.baseUrl, authHeader(early));
  });

  it('survives a restart: a new app instance on the same database accepts the token', async () => {
    const restarted = await anotherInstance(api);
    try {
      await expectAccepted(restarted.baseUrl, token);
    } finally {
      await restarted.close();
    }
  });

  it('after a rotation new tokens carry the new kid and old tokens stay valid until they expire', async () => {
    const before = await tenant.token();
    const oldKid = decodeProtectedHeader(before).kid;
    const rotation = await rotateSigningKeys(api.db.pool);
    expect(rotation.retired).to.deep.equal([oldKid]);

    // Another server picks the new key up at once (its cache is empty); this one within its refresh.
    const other = await anotherInstance(api, now);
    try {
      offset = 11_000;
      const after = await tenant.token();
      expect(decodeProtectedHeader(after).kid).to.equal(rotation.kid);
      await expectAccepted(api.baseUrl, before);
      await expectAccepted(api.baseUrl, after);
      await expectAccepted(other.baseUrl, before);
      await expectAccepted(other.baseUrl, after);
    } finally {
      await other.close();
    }
  });

  it('a token signed after a rotation elsewhere verifies here before this server refreshes its keys', async () => {
    await tenant.token(); // this server has loaded its keys just now
    const rotation = await rotateSigningKeys(api.db.pool);
    const other = await anotherInstance(api, now);
    try {
      const form = new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: tenant.clientId,
        client_secret: tenant.clientSecret,
      });
      const response = await fetch(`${other.baseUrl}/v1/oauth/token`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: form,
        signal: AbortSignal.timeout(10_000),
      });
      const issued = ((await response.json()) as { access_token: string }).access_token;
      expect(decodeProtectedHeader(issued).kid).to.equal(rotation.kid);
      await expectAccepted(api.baseUrl, issued);
    } finally {
      await other.close();
    }
  });

  it('tokens of a revoked client stop within the revocation cache bound', async () => {
    const doomed = await createTenant(api, ['devices:read']);
    const live = await doomed.token();
    await expectAccepted(api.baseUrl, live);
    await revokeClient(api.store, doomed.clientId);
    await api.catchUp();
    offset = 6_000; // past the 5 s revocation cache
    await expectRejected(api.baseUrl, authHeader(live));
    await expectAccepted(api.baseUrl, await tenant.token());
  });
});

describe('requireScope', () => {
  let api: TestApi;
  let probe: { baseUrl: string; close(): Promise<void> };
  let tenant: Tenant;

  before(async () => {
    api = await startTestApi();
    tenant = await createTenant(api, ['devices:read', 'catalog:read', 'grants:admin']);
    // The real authentication of an app on this database, in front of routes guarded as part B's are.
    const auth = createApiAuth({ config: api.config, pool: api.db.pool, store: api.store });
    const app = express();
    app.use((req, _res, next) => {
      req.log = createLogger('silent');
      next();
    });
    const router = express.Router();
    for (const scope of [
      'devices:read',
      'devices:write',
      'catalog:read',
      'grants:revoke',
      'grants:admin',
    ] as const) {
      router.get(`/needs/${scope.replace(':', '-')}`, requireScope(scope), (req, res) => {
        res.json({ projectId: req.principal!.projectId, clientId: req.principal!.clientId });
      });
    }
    app.use('/v1', auth.authenticate, router);
    app.use(errorHandler);
    probe = await listen(app);
  });
  after(async () => {
    await probe.close();
    await api.close();
  });

  const get = (path: string, token: string) => call(probe.baseUrl, path, authHeader(token));

  it('lets a token with the scope through, with the principal of its project', async () => {
    const answer = await get('/v1/needs/devices-read', await tenant.token(['devices:read']));
    expect(answer.status).to.equal(200);
    expect(JSON.parse(answer.text)).to.deep.equal({ projectId: tenant.projectId, clientId: tenant.clientId });
  });

  it('answers 403 {"error":"forbidden"} and nothing else when the scope is missing', async () => {
    const narrow = await tenant.token(['devices:read']);
    for (const path of ['/v1/needs/catalog-read', '/v1/needs/devices-write', '/v1/needs/grants-revoke']) {
      const answer = await get(path, narrow);
      expect(answer.status, path).to.equal(403);
      expect(answer.text).to.equal('{"error":"forbidden"}');
      expect(answer.headers.get('www-authenticate')).to.equal(null);
    }
  });

  it('grants:admin implies grants:revoke; grants:revoke does not imply grants:admin', async () => {
    expect((await get('/v1/needs/grants-revoke', await tenant.token(['grants:admin']))).status).to.equal(200);
    const revokeOnly = await tenant.token(['grants:revoke']);
    expect((await get('/v1/needs/grants-revoke', revokeOnly)).status).to.equal(200);
    expect((await get('/v1/needs/grants-admin', revokeOnly)).status).to.equal(403);
  });
});
