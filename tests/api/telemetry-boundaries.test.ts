import { expect } from 'chai';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import { recordReadings } from '../support/readings.js';
import { call, deviceOf, siteOf } from '../support/registry.js';
import { createTenant } from '../support/tenants.js';

interface Point {
  capability_key: string;
  bucket?: string;
  time?: string;
  value: number;
  samples?: number;
}
interface Telemetry {
  resolution: string;
  aggregation: string;
  points: Point[];
}

const HOUR_MS = 3_600_000;

/** One reading at half past every hour from `first` to `last` (UTC), value 1 so sums count them. */
function hourly(first: string, last: string): string[] {
  const times: string[] = [];
  for (let t = Date.parse(first); t <= Date.parse(last); t += HOUR_MS) times.push(new Date(t).toISOString());
  return times;
}

/**
 * Telemetry edges through the API (docs/telemetry.md): the `to` boundary is exclusive and `from` inclusive,
 * an aggregation is ignored at `raw`, and a daily bucket is a local day of the site, 23 hours long on the
 * spring-forward day and 25 hours on the fall-back day (Europe/Berlin, 2026-03-29 and 2026-10-25).
 */
describe('telemetry boundaries through the API', () => {
  let api: TestApi;
  let token: string;
  let device: string;
  let tenant: Awaited<ReturnType<typeof createTenant>>;
  let site: string;
  const telemetry = async (query: string): Promise<Telemetry> => {
    const answer = await call(
      api,
      'GET',
      `/v1/devices/${device}/telemetry?capabilities=environment.temperature&${query}`,
      {
        token,
      },
    );
    expect(answer.status, answer.text).to.equal(200);
    return answer.body as Telemetry;
  };

  before(async () => {
    api = await startTestApi();
    tenant = await createTenant(api, ['telemetry:read']);
    token = await tenant.token();
    site = await siteOf(api, tenant.projectId, 'Berlin', 'Europe/Berlin');
    device = await deviceOf(api, tenant.projectId, site, { capabilities: ['environment.temperature'] });
    const times = [
      ...hourly('2026-03-28T22:30:00.000Z', '2026-03-29T22:30:00.000Z'),
      ...hourly('2026-10-24T21:30:00.000Z', '2026-10-25T23:30:00.000Z'),
    ];
    await recordReadings(
      api.store,
      ...times.map((receivedAt) => ({
        deviceId: device,
        projectId: tenant.projectId,
        siteId: site,
        receivedAt,
        readings: [{ capability: 'environment.temperature', value: 1 }],
      })),
    );
    await api.catchUp();
  });
  after(() => api.close());

  it('takes `from` inclusive and `to` exclusive, raw and bucketed', async () => {
    const raw = await telemetry('resolution=raw&from=2026-03-29T00:30:00Z&to=2026-03-29T02:30:00Z');
    expect(raw.points.map((p) => p.time)).to.deep.equal([
      '2026-03-29T00:30:00.000Z',
      '2026-03-29T01:30:00.000Z',
    ]);
    const minutes = await telemetry('resolution=1m&from=2026-03-29T00:30:00Z&to=2026-03-29T02:30:00Z');
    expect(minutes.points.map((p) => p.bucket)).to.deep.equal([
      '2026-03-29T00:30:00.000Z',
      '2026-03-29T01:30:00.000Z',
    ]);
    const hours = await telemetry('resolution=1h&from=2026-03-29T01:00:00Z&to=2026-03-29T02:00:00Z');
    expect(hours.points.map((p) => p.bucket)).to.deep.equal(['2026-03-29T01:00:00.000Z']);
    const empty = await telemetry('resolution=raw&from=2026-03-29T00:30:00Z&to=2026-03-29T00:30:00Z');
    expect(empty.points).to.deep.equal([]);
  });

  it('ignores an aggregation at raw: the same points, aggregation "none"', async () => {
    const window = 'resolution=raw&from=2026-03-29T00:00:00Z&to=2026-03-29T04:00:00Z';
    const plain = await telemetry(window);
    for (const aggregation of ['max', 'sum', 'increase']) {
      const asked = await telemetry(`${window}&aggregation=${aggregation}`);
      expect(asked).to.deep.equal(plain);
      expect(asked.aggregation).to.equal('none');
    }
    expect(plain.points).to.have.length(4);
  });

  // Each day's bucket runs from local midnight to local midnight: 23 hours when the clocks go forward, 25 when
  // they go back, with one reading on each day around it (at 23:30 local).
  const dstDays = [
    {
      day: 'spring-forward',
      hours: 23,
      from: '2026-03-27T23:00:00Z',
      to: '2026-03-30T22:00:00Z',
      buckets: [
        ['2026-03-27T23:00:00.000Z', 1], // 28 March, CET
        ['2026-03-28T23:00:00.000Z', 23], // 29 March: 00:00 CET to 00:00 CEST
        ['2026-03-29T22:00:00.000Z', 1], // 30 March, CEST
      ],
    },
    {
      day: 'fall-back',
      hours: 25,
      from: '2026-10-23T22:00:00Z',
      to: '2026-10-26T23:00:00Z',
      buckets: [
        ['2026-10-23T22:00:00.000Z', 1], // 24 October, CEST
        ['2026-10-24T22:00:00.000Z', 25], // 25 October: 00:00 CEST to 00:00 CET
        ['2026-10-25T23:00:00.000Z', 1], // 26 October, CET
      ],
    },
  ];
  for (const { day, hours, from, to, buckets } of dstDays) {
    it(`makes the ${day} day a ${hours}-hour bucket from local midnight to local midnight`, async () => {
      const days = await telemetry(`resolution=1d&aggregation=count&from=${from}&to=${to}`);
      expect(days.points.map((p) => [p.bucket, p.value])).to.deep.equal(buckets);
    });
  }

  it('caps the stored rows one query may load: 400 too_many_points, with the cap in the answer', async () => {
    // 5m is served from 1m rows: 31 days are 44,640 rows per capability; one fits under 50,000, two do not.
    const month = 'resolution=5m&from=2026-03-01T00:00:00Z&to=2026-04-01T00:00:00Z';
    expect((await telemetry(month)).resolution).to.equal('5m');
    const answer = await call(
      api,
      'GET',
      `/v1/devices/${device}/telemetry?${month}&capabilities=environment.temperature,environment.humidity`,
      { token },
    );
    expect(answer.status, answer.text).to.equal(400);
    expect(answer.body).to.deep.equal({
      error: 'invalid_query',
      reason: 'too_many_points',
      parameter: 'capabilities',
      maxPoints: 50_000,
    });
  });

  it('pages raw readings past 10,000 at the first instant it cannot serve whole, several readings to an instant', async () => {
    const capabilities = ['environment.temperature', 'environment.humidity', 'binary.switch'];
    const meter = await deviceOf(api, tenant.projectId, site, { capabilities });
    // 3,400 messages of three readings at one instant each: the 10,001st reading is the second of message 3,333.
    const start = Date.parse('2026-05-04T00:00:00.000Z');
    const at = (n: number) => new Date(start + n * 1000).toISOString();
    await recordReadings(
      api.store,
      ...Array.from({ length: 3400 }, (_, n) => ({
        deviceId: meter,
        projectId: tenant.projectId,
        siteId: site,
        receivedAt: at(n),
        readings: [
          { capability: 'environment.temperature', value: n },
          { capability: 'environment.humidity', value: n % 100 },
          { capability: 'binary.switch', value: n % 2 === 0 },
        ],
      })),
    );
    await api.catchUp();
    const page = async (from: string) => {
      const answer = await call(
        api,
        'GET',
        `/v1/devices/${meter}/telemetry?resolution=raw&capabilities=${capabilities.join(',')}` +
          `&from=${from}&to=2026-05-05T00:00:00Z`,
        { token },
      );
      expect(answer.status, answer.text).to.equal(200);
      return answer.body as { points: Point[]; nextFrom?: string };
    };
    const first = await page(at(0));
    expect(first.points).to.have.length(9_999);
    expect(first.nextFrom).to.equal(at(3333));
    const second = await page(first.nextFrom!);
    expect(second.nextFrom).to.equal(undefined);
    const all = [...first.points, ...second.points];
    expect(all.map((p) => `${p.time} ${p.capability_key} ${String(p.value)}`)).to.deep.equal(
      Array.from({ length: 3400 }, (_, n) => [
        `${at(n)} environment.temperature ${n}`,
        `${at(n)} environment.humidity ${n % 100}`,
        `${at(n)} binary.switch ${n % 2 === 0}`,
      ]).flat(),
    );
  });
});
