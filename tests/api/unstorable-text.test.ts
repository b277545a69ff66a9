import { expect } from 'chai';
import { SCOPES } from '../../src/domain/identity/index.js';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import { call, deviceOf, siteOf, type Answer } from '../support/registry.js';
import { createTenant } from '../support/tenants.js';

/**
 * NUL characters and broken unicode (lone surrogates) reach PostgreSQL from paths, queries and bodies; the
 * database refuses them with a data error (SQLSTATE class 22). None of that may answer 500.
 */
function refused(answer: Answer, status: number, error: string) {
  expect(answer.status, answer.text).to.equal(status);
  expect(answer.body).to.include({ error });
  expect(answer.text).not.to.match(/at .*\.(ts|js):\d+/);
}

describe('text the database cannot store, from HTTP', () => {
  let api: TestApi;
  let token: string;
  let deviceId: string;
  before(async () => {
    api = await startTestApi();
    const tenant = await createTenant(api, [...SCOPES]);
    token = await tenant.token();
    deviceId = await deviceOf(api, tenant.projectId, await siteOf(api, tenant.projectId));
    await api.catchUp();
  });
  after(async () => {
    await api.close();
  });

  for (const id of ['dev%00ice', 'a'.repeat(65), 'dev.ice', 'dev%20ice']) {
    it(`a path id outside [A-Za-z0-9_-]{1,64} (${id.slice(0, 12)}) names nothing: 404`, async () => {
      refused(await call(api, 'GET', `/v1/devices/${id}`, { token }), 404, 'not_found');
      refused(await call(api, 'GET', `/v1/devices/${id}/state`, { token }), 404, 'not_found');
      refused(await call(api, 'GET', `/v1/pairing/sessions/${id}`, { token }), 404, 'not_found');
    });
  }

  it('a NUL or a lone surrogate in a query value is 400 invalid_query', async () => {
    for (const value of ['%00', 'x%00y']) {
      const answer = await call(api, 'GET', `/v1/devices?model=${value}`, { token });
      refused(answer, 400, 'invalid_query');
      expect(answer.body).to.include({ reason: 'invalid_text', parameter: 'model' });
    }
  });

  for (const [label, text] of [
    ['a NUL', 'room\u0000'],
    ['a lone surrogate', 'room \ud800'],
  ] as const) {
    it(`${label} in a body string is 422 invalid_request naming the field`, async () => {
      const answer = await call(api, 'POST', '/v1/bindings', {
        token,
        body: { deviceId, resourceType: 'room', resourceId: text },
      });
      refused(answer, 422, 'invalid_request');
      expect(answer.body).to.include({ reason: 'invalid_text', field: 'resourceId' });
      const nested = await call(api, 'POST', '/v1/bindings', {
        token,
        body: { deviceId, resourceType: 'room', resourceId: 'r1', channelMapping: { [text]: 'x' } },
      });
      refused(nested, 422, 'invalid_request');
    });
  }
});
