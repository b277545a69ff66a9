import { expect } from 'chai';
import { newClientId } from '../../src/identity/ids.js';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { revokeClient } from '../../src/identity/clients.js';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import {
  authHeader,
  basicAuthorization,
  clientWithSecret,
  createTenant,
  type Tenant,
} from '../support/tenants.js';

const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };

async function tokenRequest(
  api: TestApi,
  body: Record<string, string> | string,
  headers: Record<string, string> = FORM,
) {
  const response = await fetch(`${api.baseUrl}/v1/oauth/token`, {
    method: 'POST',
    headers,
    body: typeof body === 'string' ? body : new URLSearchParams(body),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    text,
    body: JSON.parse(text) as Record<string, unknown>,
  };
}

const post = (t: Tenant, extra: Record<string, string> = {}) => ({
  grant_type: 'client_credentials',
  client_id: t.clientId,
  client_secret: t.clientSecret,
  ...extra,
});

describe('POST /v1/oauth/token', () => {
  let api: TestApi;
  let postClient: Tenant;
  let basicClient: Tenant;

  before(async () => {
    api = await startTestApi();
    postClient = await createTenant(api, ['devices:read', 'telemetry:read', 'catalog:read']);
    basicClient = await createTenant(api, ['devices:read', 'grants:admin'], { auth: 'basic' });
  });
  after(async () => {
    await api.close();
  });

  describe('success', () => {
    it('issues a Bearer JWT for a post client with all its scopes, never cached, without refresh token', async () => {
      const answer = await tokenRequest(api, post(postClient));
      expect(answer.status).to.equal(200);
      expect(answer.headers.get('content-type')).to.match(/^application\/json/);
      expect(answer.headers.get('cache-control')).to.equal('no-store');
      expect(answer.headers.get('pragma')).to.equal('no-cache');
      expect(Object.keys(answer.body).sort()).to.deep.equal([
        'access_token',
        'expires_in',
        'scope',
        'token_type',
      ]);
      expect(answer.body).to.include({
        token_type: 'Bearer',
        expires_in: 3600,
        scope: 'devices:read telemetry:read catalog:read',
      });
      const claims = decodeJwt(answer.body.access_token as string);
      expect(claims).to.include({
        iss: api.config.PUBLIC_BASE_URL,
        aud: 'device-cloud-api',
        sub: postClient.clientId,
        client_id: postClient.clientId,
        project_id: postClient.projectId,
        scope: 'devices:read telemetry:read catalog:read',
      });
      expect(claims.exp! - claims.iat!).to.equal(3600);
      expect(claims.jti).to.be.a('string').with.length.greaterThan(10);
      const header = decodeProtectedHeader(answer.body.access_token as string);
      expect(header).to.include({ alg: 'ES256', typ: 'at+jwt' });
      expect(header.kid).to.be.a('string');
    });

    it('narrows to the requested scopes', async () => {
      const answer = await tokenRequest(api, post(postClient, { scope: 'catalog:read devices:read' }));
      expect(answer.status).to.equal(200);
      expect(answer.body.scope).to.equal('devices:read catalog:read');
      expect(decodeJwt(answer.body.access_token as string).scope).to.equal('devices:read catalog:read');
    });

    it('treats an empty scope as no scope parameter', async () => {
      const answer = await tokenRequest(api, post(postClient, { scope: '' }));
      expect(answer.status).to.equal(200);
      expect(answer.body.scope).to.equal('devices:read telemetry:read catalog:read');
    });

    it('lets a grants:admin client ask for the lesser grants:revoke alone', async () => {
      const answer = await tokenRequest(
        api,
        { grant_type: 'client_credentials', scope: 'grants:revoke' },
        { ...FORM, Authorization: basicAuthorization(basicClient.clientId, basicClient.clientSecret) },
      );
      expect(answer.status).to.equal(200);
      expect(answer.body.scope).to.equal('grants:revoke');
    });

    it('accepts a post client over HTTP Basic too (RFC 6749 §2.3.1: servers support Basic)', async () => {
      const answer = await tokenRequest(
        api,
        { grant_type: 'client_credentials' },
        { ...FORM, Authorization: basicAuthorization(postClient.clientId, postClient.clientSecret) },
      );
      expect(answer.status).to.equal(200);
    });

    it('works for a client the moment it is created (its stream, not a read model, is read)', async () => {
      const fresh = await createTenant(api, ['devices:read']);
      expect((await tokenRequest(api, post(fresh))).status).to.equal(200);
    });
  });

  describe('HTTP Basic (RFC 6749 §2.3.1)', () => {
    const secret = 'a:b+c%d e/f=g';

    it('decodes form-urlencoded id and secret, so a secret with ":", "+" and "%" works', async () => {
      const { clientId, projectId } = await clientWithSecret(api, secret, 'basic');
      const answer = await tokenRequest(
        api,
        { grant_type: 'client_credentials' },
        { ...FORM, Authorization: basicAuthorization(clientId, secret) },
      );
      expect(answer.status, answer.text).to.equal(200);
      expect(decodeJwt(answer.body.access_token as string).project_id).to.equal(projectId);
    });

    it('refuses the same secret sent raw, without the form-encoding step', async () => {
      const { clientId } = await clientWithSecret(api, secret, 'basic');
      const raw = `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}`;
      const answer = await tokenRequest(
        api,
        { grant_type: 'client_credentials' },
        { ...FORM, Authorization: raw },
      );
      expect(answer.status).to.equal(401);
      expect(answer.body).to.deep.equal({ error: 'invalid_client' });
    });

    it('answers 401 invalid_client to a basic client sending correct credentials in the form', async () => {
      const answer = await tokenRequest(api, post(basicClient));
      expect(answer.status).to.equal(401);
      expect(answer.body).to.deep.equal({ error: 'invalid_client' });
    });

    it('issues to a basic client using Basic', async () => {
      const answer = await tokenRequest(
        api,
        { grant_type: 'client_credentials' },
        { ...FORM, Authorization: basicAuthorization(basicClient.clientId, basicClient.clientSecret) },
      );
      expect(answer.status).to.equal(200);
      expect(answer.body.scope).to.equal('devices:read grants:admin');
    });

    it('refuses two authentication methods at once', async () => {
      const answer = await tokenRequest(
        api,
        { grant_type: 'client_credentials', client_secret: basicClient.clientSecret },
        { ...FORM, Authorization: basicAuthorization(basicClient.clientId, basicClient.clientSecret) },
      );
      expect(answer.status).to.equal(400);
      expect(answer.body.error).to.equal('invalid_request');
    });
  });

  describe('failed client authentication: one answer for every cause', () => {
    async function expectInvalidClient(answer: Awaited<ReturnType<typeof tokenRequest>>) {
      expect(answer.status).to.equal(401);
      expect(answer.text).to.equal('{"error":"invalid_client"}');
      expect(answer.headers.get('www-authenticate')).to.equal('Basic realm="device-cloud", charset="UTF-8"');
      expect(answer.headers.get('cache-control')).to.equal('no-store');
    }

    it('wrong secret', async () => {
      await expectInvalidClient(await tokenRequest(api, post(postClient, { client_secret: 'dcs_wrong' })));
    });

    it('unknown client id, well-formed or not', async () => {
      await expectInvalidClient(await tokenRequest(api, post(postClient, { client_id: newClientId() })));
      await expectInvalidClient(await tokenRequest(api, post(postClient, { client_id: 'nobody' })));
    });

    it('wrong secret over Basic', async () => {
      await expectInvalidClient(
        await tokenRequest(
          api,
          { grant_type: 'client_credentials' },
          { ...FORM, Authorization: basicAuthorization(basicClient.clientId, 'dcs_wrong') },
        ),
      );
    });

    it('malformed Basic header, or another scheme', async () => {
      for (const authorization of [
        'Basic !!!',
        `Basic ${Buffer.from('no-colon').toString('base64')}`,
        'Bearer x',
      ]) {
        await expectInvalidClient(
          await tokenRequest(
            api,
            { grant_type: 'client_credentials' },
            { ...FORM, Authorization: authorization },
          ),
        );
      }
    });

    it('no client authentication at all', async () => {
      await expectInvalidClient(await tokenRequest(api, { grant_type: 'client_credentials' }));
    });

    it('a revoked client, at once', async () => {
      const doomed = await createTenant(api, ['devices:read']);
      expect((await tokenRequest(api, post(doomed))).status).to.equal(200);
      await revokeClient(api.store, doomed.clientId);
      await expectInvalidClient(await tokenRequest(api, post(doomed)));
    });
  });

  describe('malformed requests', () => {
    it('400 unsupported_grant_type for any other grant', async () => {
      for (const grant of ['password', 'authorization_code', 'refresh_token', 'CLIENT_CREDENTIALS']) {
        const answer = await tokenRequest(api, post(postClient, { grant_type: grant }));
        expect(answer.status, grant).to.equal(400);
        expect(answer.body.error).to.equal('unsupported_grant_type');
      }
    });

    it('400 invalid_request when grant_type, client_id or client_secret is missing', async () => {
      const cases: Record<string, string>[] = [
        { client_id: postClient.clientId, client_secret: postClient.clientSecret },
        { grant_type: 'client_credentials', client_id: postClient.clientId },
        { grant_type: 'client_credentials', client_secret: postClient.clientSecret },
      ];
      for (const body of cases) {
        const answer = await tokenRequest(api, body);
        expect(answer.status, JSON.stringify(Object.keys(body))).to.equal(400);
        expect(answer.body.error).to.equal('invalid_request');
        expect(answer.headers.get('cache-control')).to.equal('no-store');
      }
    });

    it('400 invalid_request for a repeated parameter', async () => {
      const body = `${new URLSearchParams(post(postClient))}&scope=devices:read&scope=catalog:read`;
      const answer = await tokenRequest(api, body);
      expect(answer.status).to.equal(400);
      expect(answer.body.error).to.equal('invalid_request');
    });

    it('400 invalid_request for a body that is not a form, or no body', async () => {
      const json = await tokenRequest(api, JSON.stringify(post(postClient)), {
        'Content-Type': 'application/json',
      });
      expect(json.status).to.equal(400);
      expect(json.body.error).to.equal('invalid_request');
      const none = await fetch(`${api.baseUrl}/v1/oauth/token`, {
        method: 'POST',
        signal: AbortSignal.timeout(5000),
      });
      expect(none.status).to.equal(400);
      expect(await none.json()).to.include({ error: 'invalid_request' });
    });

    it('400 invalid_scope for a scope the client does not hold, or an unknown one', async () => {
      for (const scope of [
        'devices:write',
        'devices:read commands:high_risk',
        'devices:admin',
        'grants:admin',
      ]) {
        const answer = await tokenRequest(api, post(postClient, { scope }));
        expect(answer.status, scope).to.equal(400);
        expect(answer.body.error).to.equal('invalid_scope');
      }
    });

    it('checks credentials before scopes, so invalid_scope tells a stranger nothing', async () => {
      const answer = await tokenRequest(
        api,
        post(postClient, { client_secret: 'dcs_wrong', scope: 'devices:write' }),
      );
      expect(answer.status).to.equal(401);
    });
  });

  it('the issued token authenticates API calls', async () => {
    const token = await postClient.token(['devices:read']);
    const withToken = await fetch(`${api.baseUrl}/v1/no-such-route`, {
      headers: authHeader(token),
      signal: AbortSignal.timeout(5000),
    });
    expect(withToken.status).to.equal(404);
  });
});
