import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { FRESHNESS_HEADERS, deviceStateSchema } from '../../src/api/routes/device-state.js';
import { telemetrySchema } from '../../src/api/routes/telemetry.js';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import { recordReadings } from '../support/readings.js';
import { call, deviceOf, fingerprint, siteOf } from '../support/registry.js';
import { createTenant, type Tenant } from '../support/tenants.js';

interface Telemetry {
  deviceId: string;
  resolution: string;
  aggregation: string;
  aggregations?: Record<string, string>;
  points: Record<string, unknown>[];
}

describe('GET /v1/devices/{publicId}/state and /telemetry', () => {
  let api: TestApi;
  let clock = Date.parse('2026-03-29T10:00:00.000Z'); // 12:00 in Berlin, on the 23-hour day
  let tenant: Tenant;
  let other: Tenant;
  let token: string;
  let site: string;
  let meter: string;
  let silent: string;
  let foreign: string;

  const telemetry = async (device: string, query: string, bearer = token) =>
    call(api, 'GET', `/v1/devices/${device}/telemetry?${query}`, { token: bearer });
  const points = async (query: string) => {
    const answer = await telemetry(meter, query);
    expect(answer.status, answer.text).to.equal(200);
    // Bodies are JSON (interface.md); bucketed points are spliced in as text, so the header is checked too.
    expect(answer.headers.get('content-type')).to.equal('application/json; charset=utf-8');
    // zod drops keys it does not know: parsing to an equal value proves the OpenAPI schema is truthful.
    expect(telemetrySchema.parse(answer.body)).to.deep.equal(answer.body);
    return answer.body as Telemetry;
  };
  const reading = (capability: string, value: number | boolean | string, deviceTime?: string) => ({
    capability,
    value,
    ...(deviceTime && { deviceTime }),
  });

  before(async () => {
    api = await startTestApi({}, { now: () => clock });
    tenant = await createTenant(api, ['devices:read', 'telemetry:read']);
    other = await createTenant(api, ['devices:read', 'telemetry:read']);
    token = await tenant.token();
    site = await siteOf(api, tenant.projectId, 'Berlin plant', 'Europe/Berlin');
    const capabilities = [
      'environment.temperature',
      'water.leak',
      'electrical.energy_import',
      'energy.produced_today',
      'evse.state',
    ];
    meter = await deviceOf(api, tenant.projectId, site, { capabilities });
    silent = await deviceOf(api, tenant.projectId, site, { capabilities });
    foreign = await deviceOf(api, other.projectId, await siteOf(api, other.projectId), { capabilities });
    const at = (receivedAt: string, ...readings: ReturnType<typeof reading>[]) => ({
      deviceId: meter,
      projectId: tenant.projectId,
      siteId: site,
      receivedAt,
      readings,
    });
    await recordReadings(
      api.store,
      // Temperature over a few minutes on the 28th: 1m buckets 10:00 (2 readings), 10:01, 10:07.
      at('2026-03-28T10:00:10.000Z', reading('environment.temperature', 20)),
      at('2026-03-28T10:00:40.000Z', reading('environment.temperature', 22)),
      at('2026-03-28T10:01:30.000Z', reading('environment.temperature', 21)),
      at('2026-03-28T10:07:00.000Z', reading('environment.temperature', 23)),
      // A meter total and a daily counter that resets at Berlin midnight (2026-03-28T23:00Z).
      at('2026-03-28T10:00:00.000Z', reading('electrical.energy_import', 1000)),
      at('2026-03-28T20:00:00.000Z', reading('electrical.energy_import', 1500)),
      at('2026-03-28T22:30:00.000Z', reading('energy.produced_today', 12)),
      at('2026-03-28T22:50:00.000Z', reading('energy.produced_today', 12.5)),
      at('2026-03-28T23:10:00.000Z', reading('energy.produced_today', 0.25)),
      at('2026-03-29T08:00:00.000Z', reading('energy.produced_today', 4)),
      at('2026-03-29T09:00:00.000Z', reading('electrical.energy_import', 1700)),
      // The latest values, for the state.
      at('2026-03-29T09:00:00.000Z', reading('water.leak', false)),
      at('2026-03-29T09:30:00.000Z', reading('evse.state', 'charging', '2026-03-29T09:00:00.000Z')),
      at('2026-03-29T09:59:00.000Z', reading('environment.temperature', 21.5, '2026-03-29T11:58:58+02:00')),
    );
    await recordReadings(api.store, {
      deviceId: foreign,
      projectId: other.projectId,
      receivedAt: '2026-03-29T09:00:00.000Z',
      readings: [reading('environment.temperature', 30)],
    });
    await api.store.append(
      `device-${meter}`,
      [
        {
          id: randomUUID(),
          type: 'DeviceConnectivityChanged',
          data: {
            deviceId: meter,
            projectId: tenant.projectId,
            connectivity: 'online',
            observedAt: '2026-03-29T09:59:30.000Z',
            cause: 'device_reported',
          },
        },
      ],
      'any',
    );
    await api.catchUp();
  });
  after(() => api.close());

  describe('state', () => {
    it('serves the latest value per capability with unit, quality, device and server time (camelCase)', async () => {
      const answer = await call(api, 'GET', `/v1/devices/${meter}/state`, { token });
      expect(answer.status).to.equal(200);
      expect(answer.headers.get('cache-control')).to.equal('no-store');
      // How fresh: the state projector's lag as last measured (seconds, three decimals) and when.
      expect(answer.headers.get(FRESHNESS_HEADERS.lagSeconds)).to.match(/^\d+\.\d{3}$/);
      const measuredAt = Date.parse(answer.headers.get(FRESHNESS_HEADERS.measuredAt) ?? '');
      expect(Date.now() - measuredAt).to.be.within(0, 60_000);
      const body = answer.body as { state: Record<string, unknown>[] };
      expect(deviceStateSchema.parse(body)).to.deep.equal(body);
      expect(Object.keys(body)).to.deep.equal(['deviceId', 'connectivity', 'lastSeenAt', 'state']);
      expect(body).to.deep.include({
        deviceId: meter,
        connectivity: 'online',
        lastSeenAt: '2026-03-29T09:59:30.000Z',
      });
      expect(body.state).to.deep.equal([
        {
          capability: 'environment.temperature',
          value: 21.5,
          unit: 'C',
          quality: ['valid'],
          deviceTime: '2026-03-29T09:58:58.000Z',
          serverTime: '2026-03-29T09:59:00.000Z',
        },
        {
          capability: 'water.leak',
          value: false,
          unit: 'none',
          quality: ['valid'],
          deviceTime: null,
          serverTime: '2026-03-29T09:00:00.000Z',
        },
        {
          capability: 'electrical.energy_import',
          value: 1700,
          unit: 'Wh',
          quality: ['valid'],
          deviceTime: null,
          serverTime: '2026-03-29T09:00:00.000Z',
        },
        {
          capability: 'energy.produced_today',
          value: 4,
          unit: 'kWh',
          quality: ['valid'],
          deviceTime: null,
          serverTime: '2026-03-29T08:00:00.000Z',
        },
        {
          // The device's clock is 30 minutes from the server's.
          capability: 'evse.state',
          value: 'charging',
          unit: 'none',
          quality: ['clock_skew'],
          deviceTime: '2026-03-29T09:00:00.000Z',
          serverTime: '2026-03-29T09:30:00.000Z',
        },
      ]);
    });

    it('computes staleness when asked: after the threshold, and for a daily counter after local midnight', async () => {
      const saved = clock;
      try {
        clock = Date.parse('2026-03-29T22:00:30.000Z'); // 00:00:30 on the 30th in Berlin
        token = await tenant.token();
        const answer = await call(api, 'GET', `/v1/devices/${meter}/state`, { token });
        const quality = Object.fromEntries(
          (answer.body as { state: { capability: string; quality: string[] }[] }).state.map((e) => [
            e.capability,
            e.quality,
          ]),
        );
        expect(quality).to.deep.equal({
          'environment.temperature': ['stale'], // 7200 s threshold
          'water.leak': ['valid'], // on-change: 86 400 s
          'electrical.energy_import': ['valid'],
          'energy.produced_today': ['stale'], // yesterday's total, only 14 hours old
          'evse.state': ['clock_skew'],
        });
      } finally {
        clock = saved;
        token = await tenant.token();
      }
    });

    it('answers a device without readings with an empty state and unknown connectivity', async () => {
      const answer = await call(api, 'GET', `/v1/devices/${silent}/state`, { token });
      expect(answer.status).to.equal(200);
      expect(answer.body).to.deep.equal({
        deviceId: silent,
        connectivity: 'unknown',
        lastSeenAt: null,
        state: [],
      });
    });

    it("answers another project's device exactly like a missing one, and needs devices:read", async () => {
      const foreignAnswer = await call(api, 'GET', `/v1/devices/${foreign}/state`, { token });
      const missing = await call(api, 'GET', '/v1/devices/dev_doesnotexist0000000000/state', { token });
      expect(foreignAnswer.status).to.equal(404);
      expect(fingerprint(foreignAnswer)).to.deep.equal(fingerprint(missing));
      const telemetryOnly = await tenant.token(['telemetry:read']);
      const refused = await call(api, 'GET', `/v1/devices/${meter}/state`, { token: telemetryOnly });
      expect([refused.status, refused.body]).to.deep.equal([403, { error: 'forbidden' }]);
    });
  });

  describe('telemetry', () => {
    it('serves 1m buckets with snake_case points, samples, and gaps left out', async () => {
      const body = await points(
        'from=2026-03-28T10:00:00Z&to=2026-03-28T10:10:00Z&resolution=1m&capabilities=environment.temperature',
      );
      expect(body).to.deep.equal({
        deviceId: meter,
        resolution: '1m',
        aggregation: 'avg',
        aggregations: { 'environment.temperature': 'avg' },
        points: [
          {
            capability_key: 'environment.temperature',
            bucket: '2026-03-28T10:00:00.000Z',
            value: 21,
            samples: 2,
          },
          {
            capability_key: 'environment.temperature',
            bucket: '2026-03-28T10:01:00.000Z',
            value: 21,
            samples: 1,
          },
          {
            capability_key: 'environment.temperature',
            bucket: '2026-03-28T10:07:00.000Z',
            value: 23,
            samples: 1,
          },
        ],
      });
    });

    it('serves 5m from the 1m buckets, and accepts an offset in from and to', async () => {
      const body = await points(
        'from=2026-03-28T11:00:00%2B01:00&to=2026-03-28T11:10:00%2B01:00&resolution=5m' +
          '&capabilities=environment.temperature&aggregation=max',
      );
      expect(body.points.map((p) => [p.bucket, p.value, p.samples])).to.deep.equal([
        ['2026-03-28T10:00:00.000Z', 22, 3],
        ['2026-03-28T10:05:00.000Z', 23, 1],
      ]);
    });

    it('never averages a counter: avg is served as max, and the response says so', async () => {
      const body = await points(
        'from=2026-03-27T23:00:00Z&to=2026-03-29T22:00:00Z&resolution=1d&capabilities=energy.produced_today&aggregation=avg',
      );
      expect(body.aggregation).to.equal('max');
      expect(body.points).to.deep.equal([
        {
          capability_key: 'energy.produced_today',
          bucket: '2026-03-27T23:00:00.000Z',
          value: 12.5,
          samples: 2,
        },
        { capability_key: 'energy.produced_today', bucket: '2026-03-28T23:00:00.000Z', value: 4, samples: 2 },
      ]);
    });

    it('reports "mixed" and each capability\'s function when they differ', async () => {
      const body = await points(
        'from=2026-03-28T00:00:00Z&to=2026-03-30T00:00:00Z&resolution=1h&aggregation=sum' +
          '&capabilities=environment.temperature,electrical.energy_import,water.leak',
      );
      expect(body.aggregation).to.equal('mixed');
      expect(body.aggregations).to.deep.equal({
        'environment.temperature': 'sum',
        'electrical.energy_import': 'max',
        'water.leak': 'last',
      });
      expect(body.points.filter((p) => p.capability_key === 'water.leak')).to.deep.equal([
        { capability_key: 'water.leak', bucket: '2026-03-29T09:00:00.000Z', value: 0, samples: 1 },
      ]);
    });

    it('offers a reset-aware increase across the local midnight of a DST day, per day and per hour', async () => {
      const daily = await points(
        'from=2026-03-27T23:00:00Z&to=2026-03-30T00:00:00Z&resolution=1d&capabilities=energy.produced_today&aggregation=increase',
      );
      expect(daily.aggregation).to.equal('increase');
      // Day 28: 12 -> 12.5. Day 29: reset, counted from 0 (0.25), then 0.25 -> 4.
      expect(daily.points.map((p) => [p.bucket, p.value])).to.deep.equal([
        ['2026-03-27T23:00:00.000Z', 0.5],
        ['2026-03-28T23:00:00.000Z', 4],
      ]);
      const hourly = await points(
        'from=2026-03-28T23:00:00Z&to=2026-03-29T09:00:00Z&resolution=1h&capabilities=energy.produced_today&aggregation=increase',
      );
      // The hour before the window is the baseline of the first one.
      expect(hourly.points.map((p) => [p.bucket, p.value])).to.deep.equal([
        ['2026-03-28T23:00:00.000Z', 0.25],
        ['2026-03-29T08:00:00.000Z', 3.75],
      ]);
      const meterTotal = await points(
        'from=2026-03-28T00:00:00Z&to=2026-03-30T00:00:00Z&resolution=1h&capabilities=electrical.energy_import&aggregation=increase',
      );
      expect(meterTotal.points.map((p) => p.value)).to.deep.equal([0, 500, 200]);
      const fiveMinutes = await points(
        'from=2026-03-28T22:30:00Z&to=2026-03-28T23:15:00Z&resolution=5m&capabilities=energy.produced_today&aggregation=increase',
      );
      expect(fiveMinutes.points.map((p) => [p.bucket, p.value])).to.deep.equal([
        ['2026-03-28T22:30:00.000Z', 0],
        ['2026-03-28T22:50:00.000Z', 0.5],
        ['2026-03-28T23:10:00.000Z', 0.25],
      ]);
    });

    it('serves raw readings with their times, aggregation "none", and text values as reported', async () => {
      const body = await points(
        'from=2026-03-29T09:00:00Z&to=2026-03-29T10:00:00Z&resolution=raw&capabilities=evse.state,water.leak',
      );
      expect(body).to.deep.equal({
        deviceId: meter,
        resolution: 'raw',
        aggregation: 'none',
        points: [
          {
            capability_key: 'water.leak',
            time: '2026-03-29T09:00:00.000Z',
            value: false,
            device_time: null,
            server_time: '2026-03-29T09:00:00.000Z',
          },
          {
            capability_key: 'evse.state',
            time: '2026-03-29T09:00:00.000Z',
            value: 'charging',
            device_time: '2026-03-29T09:00:00.000Z',
            server_time: '2026-03-29T09:30:00.000Z',
          },
        ],
      });
    });

    it('defaults to every numeric capability of the device at 1h, avg where meaningful', async () => {
      const body = await points('from=2026-03-29T00:00:00Z&to=2026-03-30T00:00:00Z');
      expect(body.resolution).to.equal('1h');
      expect(body.aggregations).to.deep.equal({
        'environment.temperature': 'avg',
        'water.leak': 'last',
        'electrical.energy_import': 'max',
        'energy.produced_today': 'max',
      });
    });

    it('refuses bad queries with 400 invalid_query and a reason', async () => {
      const window = 'from=2026-03-28T00:00:00Z&to=2026-03-28T01:00:00Z';
      const cases: [string, string, string][] = [
        ['to=2026-03-28T01:00:00Z', 'missing', 'from'],
        ['from=yesterday&to=2026-03-28T01:00:00Z', 'invalid_time', 'from'],
        ['from=2026-03-28T00:00:00&to=2026-03-28T01:00:00Z', 'invalid_time', 'from'],
        ['from=2026-03-28T02:00:00Z&to=2026-03-28T01:00:00Z', 'from_after_to', 'from'],
        [`${window}&resolution=2m`, 'unknown_resolution', 'resolution'],
        [`${window}&aggregation=median`, 'unknown_aggregation', 'aggregation'],
        [`${window}&capabilities=environment.radon`, 'unknown_capability', 'capabilities'],
        [`${window}&capabilities=environment.temperature,`, 'empty_capability', 'capabilities'],
        [`${window}&capabilities=evse.state`, 'not_numeric', 'capabilities'],
        ['from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:01Z&resolution=raw', 'window_too_large', 'to'],
        ['from=2026-03-01T00:00:00Z&to=2026-03-09T00:00:00Z&resolution=1m', 'window_too_large', 'to'],
        [`${window}&limit=5`, 'unknown_parameter', 'limit'],
        [`${window}&resolution=1m&resolution=1h`, 'repeated_parameter', 'resolution'],
      ];
      for (const [query, reason, parameter] of cases) {
        const answer = await telemetry(meter, query);
        expect([answer.status, answer.body], query).to.deep.equal([
          400,
          { error: 'invalid_query', reason, parameter },
        ]);
      }
    });

    it("answers another project's device exactly like a missing one, and needs telemetry:read", async () => {
      const query = 'from=2026-03-29T00:00:00Z&to=2026-03-30T00:00:00Z';
      const foreignAnswer = await telemetry(foreign, query);
      const missing = await telemetry('dev_doesnotexist0000000000', query);
      expect(foreignAnswer.status).to.equal(404);
      expect(fingerprint(foreignAnswer)).to.deep.equal(fingerprint(missing));
      // Named capabilities are read while the device is looked up: the foreign device's reading (30 °C on
      // the 29th) is there to be read, and the answer is still that of a device that does not exist.
      for (const resolution of ['1m', 'raw']) {
        const named = `${query}&capabilities=environment.temperature&resolution=${resolution}`;
        const foreignNamed = await telemetry(foreign, named);
        expect(foreignNamed.status).to.equal(404);
        expect(fingerprint(foreignNamed)).to.deep.equal(
          fingerprint(await telemetry('dev_doesnotexist0000000000', named)),
        );
      }
      // Too many points for one query: refused for the caller's own device, and still the 404 of a device
      // that does not exist for another project's (the read that failed is not what answers).
      const tooMany =
        'from=2026-03-01T00:00:00Z&to=2026-03-31T00:00:00Z&resolution=5m' +
        '&capabilities=environment.temperature,electrical.energy_import';
      const own = await telemetry(meter, tooMany);
      expect([own.status, (own.body as { reason?: string }).reason]).to.deep.equal([400, 'too_many_points']);
      const foreignTooMany = await telemetry(foreign, tooMany);
      expect(fingerprint(foreignTooMany)).to.deep.equal(
        fingerprint(await telemetry('dev_doesnotexist0000000000', tooMany)),
      );
      expect(foreignTooMany.status).to.equal(404);
      const readOnly = await tenant.token(['devices:read']);
      const refused = await telemetry(meter, query, readOnly);
      expect([refused.status, refused.body]).to.deep.equal([403, { error: 'forbidden' }]);
    });
  });
});
