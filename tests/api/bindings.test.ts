import { expect } from 'chai';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import { call, deviceOf, siteOf } from '../support/registry.js';
import { createTenant } from '../support/tenants.js';

describe('POST /v1/bindings and GET /v1/bindings', () => {
  let api: TestApi;
  let token: string;
  let device: string;
  let second: string;
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    call(api, 'POST', '/v1/bindings', { token, body, headers });
  const valid = (overrides: Record<string, unknown> = {}) => ({
    deviceId: device,
    resourceType: 'greenhouse',
    resourceId: 'gh-7',
    channelMapping: { 'environment.temperature': 'air_temp', 'environment.humidity': 'air_rh' },
    ...overrides,
  });

  before(async () => {
    api = await startTestApi();
    const tenant = await createTenant(api, ['devices:read', 'devices:write']);
    token = await tenant.token();
    const site = await siteOf(api, tenant.projectId);
    device = await deviceOf(api, tenant.projectId, site);
    second = await deviceOf(api, tenant.projectId, site);
  });
  after(() => api.close());

  it('creates a binding (201) that the list shows at once', async () => {
    const answer = await post(valid());
    expect(answer.status).to.equal(201);
    const { binding } = answer.body as { binding: Record<string, unknown> };
    expect(Object.keys(binding)).to.deep.equal([
      'bindingId',
      'deviceId',
      'resourceType',
      'resourceId',
      'channelMapping',
      'createdAt',
    ]);
    expect(binding).to.deep.include({ deviceId: device, resourceType: 'greenhouse', resourceId: 'gh-7' });
    expect(binding.bindingId).to.match(/^bnd_[A-Za-z0-9_-]{22}$/);
    const listed = (await call(api, 'GET', '/v1/bindings', { token })).body as { bindings: unknown[] };
    expect(listed.bindings).to.deep.include(binding);
  });

  it('binds many devices to one resource, and without a key creates a new binding each time', async () => {
    const a = await post(valid({ channelMapping: undefined }));
    const b = await post(valid({ channelMapping: undefined }));
    const c = await post(valid({ deviceId: second }));
    expect([a.status, b.status, c.status]).to.deep.equal([201, 201, 201]);
    const ids = [a, b, c].map((x) => (x.body as { binding: { bindingId: string } }).binding.bindingId);
    expect(new Set(ids).size).to.equal(3);
    expect((a.body as { binding: { channelMapping: unknown } }).binding.channelMapping).to.deep.equal({});
  });

  describe('validation (422 invalid_request with reason and field)', () => {
    const cases: [string, () => unknown, string, string][] = [
      [
        'a channelMapping key outside the catalogue',
        () => valid({ channelMapping: { 'environment.temp': 'x' } }),
        'unknown_capability',
        'channelMapping.environment.temp',
      ],
      [
        'a channelMapping value that is not a string',
        () => valid({ channelMapping: { 'water.leak': 1 } }),
        'wrong_type',
        'channelMapping.water.leak',
      ],
      [
        'an empty channelMapping value',
        () => valid({ channelMapping: { 'water.leak': '' } }),
        'empty',
        'channelMapping.water.leak',
      ],
      ['a missing deviceId', () => valid({ deviceId: undefined }), 'missing', 'deviceId'],
      ['an empty resourceType', () => valid({ resourceType: '' }), 'empty', 'resourceType'],
      ['a numeric resourceId', () => valid({ resourceId: 7 }), 'wrong_type', 'resourceId'],
      ['an overlong resourceId', () => valid({ resourceId: 'x'.repeat(257) }), 'too_long', 'resourceId'],
      ['an unknown field', () => valid({ resourceName: 'x' }), 'unknown_field', 'resourceName'],
      ['a body that is an array', () => [valid()], 'wrong_type', ''],
    ];
    for (const [what, body, reason, field] of cases) {
      it(`refuses ${what}`, async () => {
        const answer = await post(body());
        expect(answer.status).to.equal(422);
        const expected: Record<string, string> = { error: 'invalid_request', reason };
        if (field) expected.field = field;
        expect(answer.body).to.deep.equal(expected);
      });
    }

    it('refuses a candidate: only registered devices (with a public id) can be bound', async () => {
      const answer = await post(valid({ deviceId: '0x00158d0001a2b3c4' }));
      expect(answer.status).to.equal(404);
      expect(answer.body).to.deep.equal({ error: 'not_found' });
    });
  });

  describe('idempotency', () => {
    it('replays the identical answer for the same key and body (header or body field)', async () => {
      const first = await post(valid(), { 'Idempotency-Key': 'order-1' });
      const again = await post(valid(), { 'Idempotency-Key': 'order-1' });
      const viaBody = await post(valid({ idempotencyKey: 'order-1' }));
      expect(first.status).to.equal(201);
      for (const answer of [again, viaBody]) {
        expect(answer.status).to.equal(first.status);
        expect(answer.text).to.equal(first.text);
      }
      const reordered = await post(
        valid({
          channelMapping: { 'environment.humidity': 'air_rh', 'environment.temperature': 'air_temp' },
        }),
        { 'Idempotency-Key': 'order-1' },
      );
      expect(reordered.text, 'key order in channelMapping does not make a different request').to.equal(
        first.text,
      );
    });

    it('answers 409 conflict when the key comes back with a different body', async () => {
      await post(valid(), { 'Idempotency-Key': 'order-2' });
      const answer = await post(valid({ resourceId: 'gh-8' }), { 'Idempotency-Key': 'order-2' });
      expect(answer.status).to.equal(409);
      expect(answer.body).to.deep.equal({ error: 'conflict', reason: 'idempotency_key_reused' });
    });

    it('keeps keys apart per project', async () => {
      const stranger = await createTenant(api, ['devices:write']);
      const site = await siteOf(api, stranger.projectId);
      const theirDevice = await deviceOf(api, stranger.projectId, site);
      await post(valid(), { 'Idempotency-Key': 'shared-key' });
      const theirs = await call(api, 'POST', '/v1/bindings', {
        token: await stranger.token(),
        body: valid({ deviceId: theirDevice }),
        headers: { 'Idempotency-Key': 'shared-key' },
      });
      expect(theirs.status).to.equal(201);
    });

    it('refuses a header key and a body key that differ, and a malformed key', async () => {
      const both = await post(valid({ idempotencyKey: 'a' }), { 'Idempotency-Key': 'b' });
      expect(both.status).to.equal(422);
      expect(both.body).to.deep.include({ reason: 'idempotency_key_mismatch' });
      const spaced = await post(valid({ idempotencyKey: 'has space' }));
      expect(spaced.status).to.equal(422);
      expect(spaced.body).to.deep.include({ field: 'idempotencyKey' });
    });

    it('creates exactly one binding when identical retries race', async () => {
      const answers = await Promise.all(
        Array.from({ length: 12 }, () =>
          post(valid({ resourceId: 'race' }), { 'Idempotency-Key': 'race-1' }),
        ),
      );
      expect(answers.map((a) => a.status)).to.deep.equal(answers.map(() => 201));
      expect(new Set(answers.map((a) => a.text)).size).to.equal(1);
      const listed = (await call(api, 'GET', '/v1/bindings', { token })).body as {
        bindings: { resourceId: string }[];
      };
      expect(listed.bindings.filter((b) => b.resourceId === 'race')).to.have.length(1);
    });
  });

  it('has no DELETE: it answers 404 not_found', async () => {
    const { bindingId } = ((await post(valid())).body as { binding: { bindingId: string } }).binding;
    for (const path of ['/v1/bindings', `/v1/bindings/${bindingId}`]) {
      const answer = await call(api, 'DELETE', path, { token });
      expect(answer.status, path).to.equal(404);
      expect(answer.body).to.deep.equal({ error: 'not_found' });
    }
    const listed = (await call(api, 'GET', '/v1/bindings', { token })).body as {
      bindings: { bindingId: string }[];
    };
    expect(listed.bindings.map((b) => b.bindingId)).to.include(bindingId);
  });

  it('refuses a body that is not JSON with 415', async () => {
    const answer = await call(api, 'POST', '/v1/bindings', {
      token,
      body: 'deviceId=x',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    });
    expect(answer.status).to.equal(415);
  });
});
