import { expect } from 'chai';
import { decodeJwt } from 'jose';
import {
  allowInsecureRequests,
  ClientSecretBasic,
  ClientSecretPost,
  clientCredentialsGrant,
  discovery,
  type ClientAuth,
} from 'openid-client';
import { SCOPES } from '../../src/domain/identity/index.js';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import { startPrefixProxy, type PrefixProxy } from '../support/prefix-proxy.js';
import { authHeader, createTenant, type Tenant } from '../support/tenants.js';

/**
 * A standard OAuth library (openid-client) finds the token endpoint through RFC 8414 metadata and gets a
 * token with either client authentication method. The API sits behind a loopback proxy so that
 * PUBLIC_BASE_URL (the issuer) names the address clients really use, with and without a path prefix.
 */
describe('GET /.well-known/oauth-authorization-server and OAuth discovery', function () {
  this.timeout(60_000);

  for (const prefix of ['', '/devcloud']) {
    describe(prefix === '' ? 'issuer at the root' : `issuer with the path ${prefix}`, () => {
      let proxy: PrefixProxy;
      let api: TestApi;
      let postClient: Tenant;
      let basicClient: Tenant;
      const wellKnown = () =>
        `${new URL(proxy.baseUrl).origin}/.well-known/oauth-authorization-server${prefix}`;
      // openid-client refuses plain http; these requests never leave the loopback interface.
      const insecure = { algorithm: 'oauth2' as const, execute: [allowInsecureRequests] };
      const discover = (tenant: Tenant, auth: ClientAuth) =>
        discovery(new URL(proxy.baseUrl), tenant.clientId, undefined, auth, insecure);

      before(async () => {
        proxy = await startPrefixProxy(prefix);
        api = await startTestApi({ PUBLIC_BASE_URL: proxy.baseUrl });
        proxy.target = api.baseUrl;
        postClient = await createTenant(api, ['devices:read', 'telemetry:read']);
        basicClient = await createTenant(api, ['devices:read'], { auth: 'basic' });
      });
      after(async () => {
        await proxy?.close();
        await api?.close();
      });

      it('publishes RFC 8414 metadata without authentication at the path derived from the issuer', async () => {
        const response = await fetch(wellKnown(), { signal: AbortSignal.timeout(10_000) });
        expect(response.status).to.equal(200);
        expect(response.headers.get('content-type')).to.match(/^application\/json/);
        expect(response.headers.get('cache-control')).to.equal('public, max-age=3600');
        expect(await response.json()).to.deep.equal({
          issuer: proxy.baseUrl,
          token_endpoint: `${proxy.baseUrl}/v1/oauth/token`,
          grant_types_supported: ['client_credentials'],
          token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
          scopes_supported: [...SCOPES],
          response_types_supported: [],
        });
        // The request reached the API at the RFC 8414 path itself, not a rewritten one.
        expect(proxy.paths).to.include(`/.well-known/oauth-authorization-server${prefix}`);
        if (prefix !== '') {
          // The form some clients try (well-known appended to the issuer) answers the same document.
          const appended = await fetch(`${proxy.baseUrl}/.well-known/oauth-authorization-server`);
          expect(appended.status).to.equal(200);
          expect(((await appended.json()) as { issuer: string }).issuer).to.equal(proxy.baseUrl);
        }
      });

      const methods = [
        ['client_secret_basic', () => basicClient, (t: Tenant) => ClientSecretBasic(t.clientSecret)],
        ['client_secret_post', () => postClient, (t: Tenant) => ClientSecretPost(t.clientSecret)],
      ] as const;
      for (const [method, tenant, auth] of methods) {
        it(`discovery() then clientCredentialsGrant() with ${method}: the token works on an API call`, async () => {
          const config = await discover(tenant(), auth(tenant()));
          expect(config.serverMetadata().token_endpoint).to.equal(`${proxy.baseUrl}/v1/oauth/token`);
          const tokens = await clientCredentialsGrant(config, { scope: 'devices:read' });
          expect(tokens.token_type.toLowerCase()).to.equal('bearer');
          expect(tokens.scope).to.equal('devices:read');
          expect(decodeJwt(tokens.access_token).iss).to.equal(config.serverMetadata().issuer);
          const devices = await fetch(`${proxy.baseUrl}/v1/devices`, {
            headers: authHeader(tokens.access_token),
            signal: AbortSignal.timeout(10_000),
          });
          expect(devices.status).to.equal(200);
          expect(await devices.json())
            .to.have.property('devices')
            .that.is.an('array');
        });
      }

      it('a client created with --auth basic cannot use client_secret_post, whatever the metadata lists', async () => {
        const config = await discover(basicClient, ClientSecretPost(basicClient.clientSecret));
        const failure = await clientCredentialsGrant(config).then(
          () => undefined,
          (error: unknown) => error as { status?: number; response?: Response },
        );
        // openid-client reports the 401 by its Basic challenge; the body says which OAuth error it is.
        expect(failure?.status).to.equal(401);
        expect(await failure?.response?.json()).to.deep.equal({ error: 'invalid_client' });
      });
    });
  }
});
