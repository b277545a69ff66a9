import { expect } from 'chai';
import { apiWithDevice } from '../support/api-with-device.js';
import { call, type Answer } from '../support/registry.js';

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
  const env = apiWithDevice();

  for (const id of ['dev%00ice', 'a'.repeat(65), 'dev.ice', 'dev%20ice']) {
    it(`a path id outside [A-Za-z0-9_-]{1,64} (${id.slice(0, 12)}) names nothing: 404`, async () => {
      refused(await call(env.api, 'GET', `/v1/devices/${id}`, { token: env.token }), 404, 'not_found');
      refused(await call(env.api, 'GET', `/v1/devices/${id}/state`, { token: env.token }), 404, 'not_found');
      refused(
        await call(env.api, 'GET', `/v1/pairing/sessions/${id}`, { token: env.token }),
        404,
        'not_found',
      );
    });
  }

  it('a NUL or a lone surrogate in a query value is 400 invalid_query', async () => {
    for (const value of ['%00', 'x%00y']) {
      const answer = await call(env.api, 'GET', `/v1/devices?model=${value}`, { token: env.token });
      refused(answer, 400, 'invalid_query');
      expect(answer.body).to.include({ reason: 'invalid_text', parameter: 'model' });
    }
  });

  for (const [label, text] of [
    ['a NUL', 'room\u0000'],
    ['a lone surrogate', 'room \ud800'],
  ] as const) {
    it(`${label} in a body string is 422 invalid_request naming the field`, async () => {
      const answer = await call(env.api, 'POST', '/v1/bindings', {
        token: env.token,
        body: { deviceId: env.deviceId, resourceType: 'room', resourceId: text },
      });
      refused(answer, 422, 'invalid_request');
      expect(answer.body).to.include({ reason: 'invalid_text', field: 'resourceId' });
      const nested = await call(env.api, 'POST', '/v1/bindings', {
        token: env.token,
        body: {
          deviceId: env.deviceId,
          resourceType: 'room',
          resourceId: 'r1',
          channelMapping: { [text]: 'x' },
        },
      });
      refused(nested, 422, 'invalid_request');
    });
  }
});
