import type { Server } from 'node:http';
import { deflateSync, gzipSync } from 'node:zlib';
import { expect } from 'chai';
import express from 'express';
import { errorHandler, toHttp, unknownRoute } from '../../src/api/http-errors.js';
import { SCOPES } from '../../src/domain/identity/index.js';
import { createLogger } from '../../src/infra/logger.js';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import { authHeader, createTenant } from '../support/tenants.js';

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

async function send(
  api: { baseUrl: string },
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<Answer> {
  const response = await fetch(`${api.baseUrl}${path}`, {
    method,
    headers: options.headers,
    body: options.body,
    signal: AbortSignal.timeout(10_000),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

function expectJsonError(answer: Answer, status: number, error: string) {
  expect(answer.status, answer.text).to.equal(status);
  expect(answer.headers.get('content-type')).to.match(/^application\/json/);
  expect(JSON.parse(answer.text)).to.include({ error });
  expect(answer.text).not.to.match(/at .*\.(ts|js):\d+/); // never a stack trace
}

describe('error model: every error is JSON {"error": …}', () => {
  let api: TestApi;
  let token: string;

  before(async () => {
    api = await startTestApi();
    token = await (await createTenant(api, [...SCOPES])).token();
  });
  after(async () => {
    await api.close();
  });

  const auth = () => authHeader(token);

  it('an unknown route is 404 not_found, inside and outside /v1', async () => {
    expectJsonError(await send(api, 'GET', '/v1/nothing-here', { headers: auth() }), 404, 'not_found');
    expectJsonError(await send(api, 'GET', '/nothing-here'), 404, 'not_found');
    expect((await send(api, 'GET', '/v1/nothing-here', { headers: auth() })).text).to.equal(
      '{"error":"not_found"}',
    );
  });

  it('the paths the spec says do not exist answer 404 to any method', async () => {
    for (const path of ['/v1/permit-join', '/v1/devices/discover', '/v1/provisioning']) {
      for (const method of ['GET', 'POST', 'PUT', 'DELETE']) {
        const answer = await send(api, method, path, { headers: auth() });
        expectJsonError(answer, 404, 'not_found');
      }
    }
  });

  it('without a token those paths, like every /v1 path, answer 401 first', async () => {
    expectJsonError(await send(api, 'GET', '/v1/permit-join'), 401, 'unauthorized');
  });

  it('DELETE on bindings does not exist: 404 not_found, no Allow header', async () => {
    for (const path of ['/v1/bindings', '/v1/bindings/anything']) {
      const answer = await send(api, 'DELETE', path, { headers: auth() });
      expectJsonError(answer, 404, 'not_found');
      expect(answer.headers.get('allow')).to.equal(null);
    }
  });

  it('OPTIONS is served nowhere: 404 not_found JSON, no Allow, no CORS headers', async () => {
    const preflight = {
      Origin: 'https://app.example',
      'Access-Control-Request-Method': 'POST',
      'Access-Control-Request-Headers': 'authorization, content-type',
    };
    for (const path of [
      '/health',
      '/metrics',
      '/openapi.json',
      '/nothing-here',
      '/v1/devices',
      '/v1/devices/dev_x',
      '/v1/devices/dev_x/commands',
      '/v1/devices/dev_x/capability-grants',
      '/v1/bindings',
      '/v1/pairing/sessions',
      '/v1/pairing/sessions/pss_x',
      '/v1/catalog/capabilities',
      '/v1/live',
      '/v1/nothing-here',
    ]) {
      for (const headers of [{ ...auth(), ...preflight }, auth()]) {
        const answer = await send(api, 'OPTIONS', path, { headers });
        expectJsonError(answer, 404, 'not_found');
        expect(answer.text, path).to.equal('{"error":"not_found"}');
        expect(answer.headers.get('allow'), path).to.equal(null);
        const cors = [...answer.headers.keys()].filter((name) => name.startsWith('access-control-'));
        expect(cors, path).to.deep.equal([]);
      }
    }
    // Like any method under /v1, without a token it is 401 first; the token endpoint allows only POST (405).
    expectJsonError(await send(api, 'OPTIONS', '/v1/bindings', { headers: preflight }), 401, 'unauthorized');
    const token = await send(api, 'OPTIONS', '/v1/oauth/token', { headers: preflight });
    expectJsonError(token, 405, 'method_not_allowed');
    expect(token.headers.get('allow')).to.equal('POST');
  });

  it('malformed JSON is 400 invalid_request', async () => {
    const answer = await send(api, 'POST', '/v1/bindings', {
      headers: { ...auth(), 'Content-Type': 'application/json' },
      body: '{"deviceId": ',
    });
    expectJsonError(answer, 400, 'invalid_request');
  });

  it('a body over 64 kB is 413 payload_too_large', async () => {
    const answer = await send(api, 'POST', '/v1/bindings', {
      headers: { ...auth(), 'Content-Type': 'application/json' },
      body: JSON.stringify({ deviceId: 'x', resourceType: 't', resourceId: 'r', pad: 'x'.repeat(70 * 1024) }),
    });
    expectJsonError(answer, 413, 'payload_too_large');
  });

  it('a body that is not JSON on a JSON endpoint is 415 unsupported_media_type', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded']) {
      const answer = await send(api, 'POST', '/v1/bindings', {
        headers: { ...auth(), 'Content-Type': type },
        body: 'deviceId=x',
      });
      expectJsonError(answer, 415, 'unsupported_media_type');
    }
    const untyped = await send(api, 'POST', '/v1/bindings', { headers: auth(), body: Buffer.from('{}') });
    expectJsonError(untyped, 415, 'unsupported_media_type');
  });

  describe('a Content-Encoding other than identity is 415 on every body route, the token endpoint included', () => {
    const json = Buffer.from('{"deviceId":"dev_x","resourceType":"room","resourceId":"r1"}');
    const form = Buffer.from('grant_type=client_credentials&client_id=cli_x&client_secret=dcs_x');
    const bodyRoutes = [
      ['POST', '/v1/bindings'],
      ['POST', '/v1/devices/dev_x/commands'],
      ['PUT', '/v1/devices/dev_x/capability-grants'],
      ['POST', '/v1/pairing/sessions'],
      ['POST', '/v1/pairing/sessions/pss_x/adopt'],
      ['POST', '/v1/pairing/sessions/pss_x/reject'],
    ] as const;

    for (const [label, encoding, encode] of [
      ['gzip (a real gzip body)', 'gzip', gzipSync],
      ['deflate (a real deflate body)', 'deflate', deflateSync],
      ['br', 'br', (b: Buffer) => b],
      ['an unknown coding', 'x-squeeze', (b: Buffer) => b],
      ['a list ending in identity', 'gzip, identity', gzipSync],
    ] as const) {
      it(label, async () => {
        for (const [method, path] of bodyRoutes) {
          const answer = await send(api, method, path, {
            headers: { ...auth(), 'Content-Type': 'application/json', 'Content-Encoding': encoding },
            body: encode(json),
          });
          expectJsonError(answer, 415, 'unsupported_media_type');
          expect(answer.text).to.equal('{"error":"unsupported_media_type"}');
        }
        const token = await send(api, 'POST', '/v1/oauth/token', {
          headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Encoding': encoding },
          body: encode(form),
        });
        expectJsonError(token, 415, 'unsupported_media_type');
        expect(token.headers.get('cache-control')).to.equal('no-store');
      });
    }

    it('identity, in any case, is a body taken as it is', async () => {
      const answer = await send(api, 'POST', '/v1/bindings', {
        headers: { ...auth(), 'Content-Type': 'application/json', 'Content-Encoding': 'Identity' },
        body: json,
      });
      expectJsonError(answer, 404, 'not_found'); // the device does not exist: the body was read
      const token = await send(api, 'POST', '/v1/oauth/token', {
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Encoding': 'identity' },
        body: form,
      });
      expectJsonError(token, 401, 'invalid_client');
    });
  });

  it('a malformed %-escape in a path is 400 invalid_request, not a fault', async () => {
    expectJsonError(
      await send(api, 'GET', '/v1/devices/%E0%A4%A', { headers: auth() }),
      400,
      'invalid_request',
    );
  });

  it('GET /health needs no token', async () => {
    expect((await send(api, 'GET', '/health')).status).to.equal(200);
  });

  it('GET /metrics does not exist unless METRICS_TOKEN is configured', async () => {
    expectJsonError(await send(api, 'GET', '/metrics'), 404, 'not_found');
    expectJsonError(await send(api, 'GET', '/metrics', { headers: auth() }), 404, 'not_found');
  });
});

describe('error model: GET /metrics with METRICS_TOKEN', () => {
  const metricsToken = 'm'.repeat(40);
  let api: TestApi;
  before(async () => {
    api = await startTestApi({ METRICS_TOKEN: metricsToken });
  });
  after(async () => {
    await api.close();
  });

  it('answers only to its own bearer token', async () => {
    expectJsonError(await send(api, 'GET', '/metrics'), 401, 'unauthorized');
    expectJsonError(
      await send(api, 'GET', '/metrics', { headers: authHeader('m'.repeat(39)) }),
      401,
      'unauthorized',
    );
    const ok = await send(api, 'GET', '/metrics', { headers: authHeader(metricsToken) });
    expect(ok.status).to.equal(200);
    expect(ok.text).to.contain('devcloud_http_requests_total');
  });

  it('OPTIONS is not served on it either, even with its token', async () => {
    const answer = await send(api, 'OPTIONS', '/metrics', { headers: authHeader(metricsToken) });
    expectJsonError(answer, 404, 'not_found');
    expect(answer.headers.get('allow')).to.equal(null);
  });
});

describe('error model: server faults', () => {
  it('a fault inside the real app is 500 internal_error without a stack', async () => {
    const api = await startTestApi();
    try {
      const tenant = await createTenant(api, ['devices:read']);
      // Take the signing keys away under the running server: issuing a token now fails inside.
      await api.db.pool.query('ALTER TABLE auth.signing_keys RENAME TO signing_keys_gone');
      const answer = await send(api, 'POST', '/v1/oauth/token', {
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: tenant.clientId,
          client_secret: tenant.clientSecret,
        }).toString(),
      });
      expect(answer.status).to.equal(500);
      expect(answer.text).to.equal('{"error":"internal_error"}');

      // Nor can a bearer token be checked: that is our fault (500), not the token's (401).
      const header = Buffer.from(JSON.stringify({ alg: 'ES256', typ: 'at+jwt', kid: 'k1' })).toString(
        'base64url',
      );
      const payload = Buffer.from(JSON.stringify({ sub: tenant.clientId })).toString('base64url');
      const probe = await send(api, 'GET', '/v1/anything', {
        headers: authHeader(`${header}.${payload}.c2ln`),
      });
      expect(probe.status).to.equal(500);
      expect(probe.text).to.equal('{"error":"internal_error"}');
    } finally {
      await api.close();
    }
  });

  it('the one error handler turns any thrown error into 500 internal_error, message and stack withheld', async () => {
    const app = express();
    app.use((req, _res, next) => {
      req.log = createLogger('silent');
      next();
    });
    app.get('/boom', () => {
      throw new Error('secret detail /work/main/src/x.ts:1');
    });
    app.use(unknownRoute);
    app.use(errorHandler);
    const server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    try {
      const address = server.address();
      const baseUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
      const answer = await send({ baseUrl }, 'GET', '/boom');
      expect(answer.status).to.equal(500);
      expect(answer.text).to.equal('{"error":"internal_error"}');
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  describe('database failures, mapped in the one place', () => {
    const pgError = (code: string, message = 'database says no') =>
      Object.assign(new Error(message), { code });

    for (const [label, error] of [
      ['08006 connection failure', pgError('08006')],
      ['57P01 admin shutdown', pgError('57P01')],
      ['57P03 cannot connect now', pgError('57P03')],
      ['ECONNREFUSED', pgError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432')],
      ['a pool connect timeout', new Error('timeout exceeded when trying to connect')],
      ['a connection that ended', new Error('Connection terminated unexpectedly')],
    ] as const) {
      it(`${label} is 503 transport_unavailable with Retry-After`, () => {
        const answer = toHttp(error);
        expect(answer.status).to.equal(503);
        expect(answer.body).to.deep.equal({ error: 'transport_unavailable' });
        expect(answer.headers['Retry-After']).to.match(/^\d+$/);
      });
    }

    it('a data error (SQLSTATE class 22) is 422 invalid_request, never 500', () => {
      for (const code of ['22P05', '22021', '22001', '22P02']) {
        const answer = toHttp(pgError(code));
        expect(answer.status, code).to.equal(422);
        expect(answer.body).to.deep.equal({ error: 'invalid_request', reason: 'invalid_value' });
      }
    });

    it('a busy database (out of connections, a deadlock, a cancelled statement) is 503 with Retry-After: 1', () => {
      for (const code of ['53300', '53200', '55P03', '57014', '40001', '40P01']) {
        const answer = toHttp(pgError(code));
        expect(answer.status, code).to.equal(503);
        expect(answer.body).to.deep.equal({ error: 'temporarily_unavailable' });
        expect(answer.headers['Retry-After']).to.equal('1');
      }
    });

    it('other database errors stay 500', () => {
      expect(toHttp(pgError('42P01')).status).to.equal(500);
    });
  });
});
