import { expect } from 'chai';
import { apiWithDevice } from '../support/api-with-device.js';
import { call } from '../support/registry.js';

describe("GET /v1/devices/{publicId}/commands: the acceptance window's bounds", () => {
  const env = apiWithDevice();

  const list = (query: string) =>
    call(env.api, 'GET', `/v1/devices/${env.deviceId}/commands?${query}`, { token: env.token });

  it('from later than to is 400 invalid_query from_after_to, naming from (as the telemetry window does)', async () => {
    for (const query of [
      'from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z',
      // The same instants compared, not the texts: 01:00+02:00 is 23:00Z the day before.
      'from=2026-03-01T00:30:00Z&to=2026-03-01T01:00:00%2B02:00',
    ]) {
      const answer = await list(query);
      expect(answer.status, answer.text).to.equal(400);
      expect(answer.body).to.deep.equal({
        error: 'invalid_query',
        reason: 'from_after_to',
        parameter: 'from',
      });
    }
  });

  it('an empty window (from = to) and a window either side open are valid', async () => {
    for (const query of [
      'from=2026-03-01T00:00:00Z&to=2026-03-01T00:00:00Z',
      'from=2026-03-01T00:00:00Z&to=2026-03-01T02:00:00%2B01:00',
      'from=2026-03-01T00:00:00Z',
      'to=2026-03-01T00:00:00Z',
    ]) {
      const answer = await list(query);
      expect(answer.status, `${query}: ${answer.text}`).to.equal(200);
      expect(answer.body).to.deep.equal({ commands: [] });
    }
  });
});
