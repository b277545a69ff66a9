import { expect } from 'chai';
import { JSON_BODY_LIMIT } from '../../src/api/json-body.js';
import { openApiDocument } from '../../src/api/openapi/document.js';
import { apiWithDevice } from '../support/api-with-device.js';
import { call, type Answer } from '../support/registry.js';
import { createTenant } from '../support/tenants.js';

/**
 * JSON.parse takes nesting of any depth, but code that walks the parsed body recursively does not: an 8 kB
 * body of 4,000 nested arrays used to exhaust the stack in the edge's text check and answer 500 on every JSON
 * route. Nesting is bounded at the edge, before any recursive code sees the body.
 */
/** docs/api.md, "Errors": the deepest nesting a JSON body may have. */
const MAX_BODY_DEPTH = 32;
const nestedArrays = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
const nestedInField = (depth: number) => `{"value":${nestedArrays(depth - 1)}}`;

/** Every operation the API documents with a JSON request body, as a method and a concrete path. */
function jsonBodyOperations(deviceId: string): [string, string][] {
  const paths = openApiDocument().paths as Record<string, Record<string, { requestBody?: unknown }>>;
  const found: [string, string][] = [];
  for (const [path, operations] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const body = operation.requestBody as { content?: Record<string, unknown> } | undefined;
      if (body?.content?.['application/json'] === undefined) continue;
      const concrete = path.replace('{publicId}', deviceId).replace('{id}', 'pss_notasession');
      found.push([method.toUpperCase(), concrete]);
    }
  }
  return found;
}

function tooDeep(answer: Answer) {
  expect(answer.status, answer.text).to.equal(422);
  expect(answer.headers.get('content-type')).to.match(/^application\/json/);
  expect(answer.body).to.deep.equal({
    error: 'invalid_request',
    reason: 'too_deep',
    maxDepth: MAX_BODY_DEPTH,
  });
}

describe('deeply nested JSON bodies', () => {
  const env = apiWithDevice();
  let routes: [string, string][];

  before(() => {
    routes = [
      ...jsonBodyOperations(env.deviceId),
      // The edge parses and checks a body on any /v1 request, whether or not the route reads one.
      ['DELETE', '/v1/pairing/sessions/pss_notasession'],
      ['POST', '/v1/no-such-route'],
    ];
  });

  it('the documented JSON routes are the ones the review probed, and more', () => {
    const described = routes.map(([method, path]) => `${method} ${path.replace(/dev_[\w-]+/, '{publicId}')}`);
    expect(described).to.include.members([
      'POST /v1/devices/{publicId}/commands',
      'PUT /v1/devices/{publicId}/capability-grants',
      'POST /v1/bindings',
      'POST /v1/pairing/sessions',
      'POST /v1/pairing/sessions/pss_notasession/adopt',
      'POST /v1/pairing/sessions/pss_notasession/reject',
    ]);
  });

  for (const depth of [3_000, 10_000, 30_000]) {
    it(`${depth} nested arrays answer 422 too_deep on every JSON route, never 500`, async () => {
      const body = nestedArrays(depth);
      // 30,000 levels are 60,000 bytes: still under the 64 kB limit, so it is the depth that is refused.
      expect(body.length).to.be.below(parseInt(JSON_BODY_LIMIT, 10) * 1024);
      for (const [method, path] of routes) {
        const answer = await call(env.api, method, path, { token: env.token, body });
        tooDeep(answer);
      }
      // Nested inside a field of an object, as a command value would be.
      for (const [method, path] of routes)
        tooDeep(await call(env.api, method, path, { token: env.token, body: nestedInField(depth) }));
    });
  }

  it(`one level over the limit (${MAX_BODY_DEPTH + 1}) is too deep; the limit itself is the route's to judge`, async () => {
    for (const [method, path] of routes) {
      tooDeep(
        await call(env.api, method, path, { token: env.token, body: nestedArrays(MAX_BODY_DEPTH + 1) }),
      );
      tooDeep(
        await call(env.api, method, path, { token: env.token, body: nestedInField(MAX_BODY_DEPTH + 1) }),
      );
      const atLimit = await call(env.api, method, path, {
        token: env.token,
        body: nestedInField(MAX_BODY_DEPTH),
      });
      expect(atLimit.status, `${method} ${path}: ${atLimit.text}`).to.be.within(400, 499);
      expect(atLimit.body).not.to.include({ reason: 'too_deep' });
    }
  });

  it('depth is checked before the scope: a client without the route scope still gets 422, not 500', async () => {
    const tenant = await createTenant(env.api, ['devices:read']);
    const narrow = await tenant.token();
    tooDeep(await call(env.api, 'POST', '/v1/bindings', { token: narrow, body: nestedArrays(10_000) }));
  });

  it('a body over the size limit is still 413 first, however deep', async () => {
    const answer = await call(env.api, 'POST', '/v1/bindings', {
      token: env.token,
      body: nestedArrays(40_000),
    });
    expect(answer.status, answer.text).to.equal(413);
    expect(answer.body).to.deep.equal({ error: 'payload_too_large' });
  });

  it('an unstorable string is still found where it is, at any allowed depth', async () => {
    const answer = await call(env.api, 'POST', '/v1/bindings', {
      token: env.token,
      body: '{"channelMapping":{"a":[[["ok","bad\\u0000"]]]}}',
    });
    expect(answer.status, answer.text).to.equal(422);
    expect(answer.body).to.deep.equal({
      error: 'invalid_request',
      reason: 'invalid_text',
      field: 'channelMapping.a.0.0.1',
    });
  });
});
