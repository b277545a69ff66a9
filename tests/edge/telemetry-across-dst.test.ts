import { once } from 'node:events';
import { expect } from 'chai';
import { EdgeSim } from '../../src/edge-sim/index.js';
import { connectedAgent, until } from '../support/edge-agent.js';
import { startEdgeService, type EdgeService } from '../support/edge-service.js';
import { call } from '../support/registry.js';

/**
 * The whole edge path under a fast clock: the simulator and the service's ingest share one clock that runs
 * an hour per real second from the evening before Europe/Berlin's 23-hour day (2026-03-29, clocks go
 * 02:00 -> 03:00), so an adopted inverter's daily counter crosses two local midnights and the DST jump in
 * about half a minute, and its readings reach the telemetry endpoint through MQTT, ingest and projectors.
 */
const SPEED = 3600;
const T0 = Date.parse('2026-03-28T21:30:00.000Z'); // 22:30 in Berlin (CET, UTC+1)
const END = Date.parse('2026-03-29T23:30:00.000Z'); // 01:30 on the 30th in Berlin (CEST, UTC+2)

interface Point {
  capability_key: string;
  bucket: string;
  time: string;
  value: number;
  samples: number;
}

/**
 * The most the simulated inverter's daily counter gains a second: 1.5 times its mean rate (signals.ts,
 * `rising`), plus the 4-decimal rounding of each value.
 */
const MAX_GAIN_PER_SECOND = 0.0006 * 1.5;
const ROUNDING = 1e-4;
interface Telemetry {
  aggregation: string;
  points: Point[];
}

describe('edge path end to end: a daily counter across local midnights and a DST change', function () {
  this.timeout(120_000);
  let edge: EdgeService;
  let sim: EdgeSim | undefined;
  let runningSince: number | undefined;
  // Frozen at T0 until the inverter is adopted, then an hour per second, and frozen again at END.
  const clock = () =>
    runningSince === undefined ? T0 : Math.min(END, T0 + (Date.now() - runningSince) * SPEED);

  before(async () => {
    edge = await startEdgeService({ now: clock });
  });
  after(async () => {
    await sim?.stop(1000);
    await edge.close();
  });

  it('stores the readings in buckets of local days (23 hours on the DST day) and never averages the counter', async () => {
    const agent = await connectedAgent(edge, {
      timezone: 'Europe/Berlin',
      sim: {
        devices: 13,
        rate: 0.02, // readings per simulated second per device: one every 50 simulated seconds
        seed: 7,
        now: clock,
        dropRate: 0,
        backoff: { initialMs: 100, maxMs: 1000 },
      },
    });
    const { token, hubId, sim: connected } = agent;
    sim = connected;

    const opened = await call(edge, 'POST', '/v1/pairing/sessions', { token, body: { hubId } });
    const { sessionId } = (opened.body as { session: { sessionId: string } }).session;
    const inverter = sim.fleet().find((d) => d.capabilities.includes('energy.produced_today'))!;
    await until('the inverter as a candidate', async () => {
      const answer = await call(edge, 'GET', `/v1/pairing/sessions/${sessionId}`, { token });
      const list = (answer.body as { session: { candidates: { ieeeAddr: string }[] } }).session.candidates;
      return list.some((c) => c.ieeeAddr === inverter.ieeeAddr) ? true : undefined;
    });
    const told = once(sim, 'adopted');
    const adopted = await call(edge, 'POST', `/v1/pairing/sessions/${sessionId}/adopt`, {
      token,
      body: { ieeeAddr: inverter.ieeeAddr },
    });
    expect(adopted.status).to.equal(201);
    const deviceId = (adopted.body as { device: { id: string } }).device.id;
    await told;

    runningSince = Date.now();
    await until(
      'the simulated clock to reach the end',
      async () => (clock() >= END ? true : undefined),
      60_000,
    );
    // Stopped once its clock is frozen: the simulator ticks every 50 ms, and a tick still due when the clock
    // reached END published its last reading after the read models had caught up, so two queries below saw
    // different totals (CI once: 312 readings by the hour, 311 by the day). Stopping waits for every reading
    // to be acknowledged (so appended); then every read model reaches the head.
    const stopped = await connected.stop(10_000);
    expect(stopped.queued + stopped.inflight, 'readings left unacknowledged').to.equal(0);
    await edge.catchUp();

    // The whole service runs on the moved clock: the first token expired days ago, so ask for a new one, as a
    // client would after a 401.
    const renewed = await agent.tenant.token();
    const telemetry = async (query: string): Promise<Telemetry> => {
      const answer = await call(edge, 'GET', `/v1/devices/${deviceId}/telemetry?${query}`, {
        token: renewed,
      });
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      return answer.body as Telemetry;
    };
    const window = 'capabilities=energy.produced_today&from=2026-03-27T00:00:00Z&to=2026-04-01T00:00:00Z';

    // Local days: midnight CET on the 28th and 29th, midnight CEST on the 30th — the 29th lasts 23 hours.
    const days = await until('the last local day to be projected', async () => {
      const answer = await telemetry(`${window}&resolution=1d&aggregation=max`);
      return answer.points.length === 3 ? answer : undefined;
    });
    expect(days.points.map((p) => p.bucket)).to.deep.equal([
      '2026-03-27T23:00:00.000Z',
      '2026-03-28T23:00:00.000Z',
      '2026-03-29T22:00:00.000Z',
    ]);
    expect(days.aggregation).to.equal('max');
    expect(days.points.every((p) => p.samples > 0)).to.equal(true);

    // Asked for an average, the server keeps the counter's max and says so.
    const asked = await telemetry(`${window}&resolution=1d&aggregation=avg`);
    expect(asked.aggregation).to.equal('max');
    expect(asked.points.map((p) => p.value)).to.deep.equal(days.points.map((p) => p.value));

    // Counters are served as max or last only: a minimum is answered with the max, and said so.
    const minima = await telemetry(`${window}&resolution=1d&aggregation=min`);
    expect(minima.aggregation).to.equal('max');

    // The counter reset at each local midnight — 23:00Z before the jump, 22:00Z after it — so the first raw
    // reading of each local day holds no more than the counter can gain since the reading before it (a
    // counter that had not reset would hold the day before's total on top). Bounded by time, not by a fixed
    // value: a loaded machine stalls the simulator's ticks, each real millisecond 3.6 simulated seconds.
    for (const midnight of ['2026-03-28T23:00:00Z', '2026-03-29T22:00:00Z']) {
      // Three simulated hours either side (3 real seconds): a stall of the simulator near midnight must not
      // leave one side of it empty; adjacent readings are compared, however far apart.
      const from = new Date(Date.parse(midnight) - 3 * 3_600_000).toISOString();
      const to = new Date(Date.parse(midnight) + 3 * 3_600_000).toISOString();
      const raw = await telemetry(`capabilities=energy.produced_today&resolution=raw&from=${from}&to=${to}`);
      const after = raw.points.findIndex((p) => Date.parse(p.time) >= Date.parse(midnight));
      expect(after, `readings before and after ${midnight}`).to.be.greaterThan(0);
      const [before, first] = [raw.points[after - 1]!, raw.points[after]!];
      expect(before.value, `last reading before ${midnight}`).to.be.greaterThan(ROUNDING);
      const gapSeconds = (Date.parse(first.time) - Date.parse(before.time)) / 1000;
      expect(
        first.value,
        `first reading after ${midnight}, ${gapSeconds} s after the one before`,
      ).to.be.at.most(MAX_GAIN_PER_SECOND * gapSeconds + ROUNDING);
    }
    const [evening, dstDay, nextDay] = days.points;
    expect(dstDay!.value).to.be.greaterThan(evening!.value * 10);
    expect(dstDay!.value).to.be.greaterThan(nextDay!.value * 10);

    // Reset-aware consumption per day never counts a reset as negative production.
    const increase = await telemetry(`${window}&resolution=1d&aggregation=increase`);
    expect(increase.aggregation).to.equal('increase');
    for (const [i, point] of increase.points.entries()) {
      expect(point.value).to.be.at.least(0);
      expect(point.value).to.be.at.most(days.points[i]!.value + 1e-9);
    }

    // Hours stay UTC-aligned through the DST jump and hold exactly the same readings as the days.
    const hours = await telemetry(`${window}&resolution=1h&aggregation=max`);
    const starts = hours.points.map((p) => Date.parse(p.bucket));
    expect(starts.every((t, i) => i === 0 || t - starts[i - 1]! === 3_600_000)).to.equal(true);
    expect(hours.points.map((p) => p.bucket)).to.include.members([
      '2026-03-29T00:00:00.000Z',
      '2026-03-29T01:00:00.000Z',
    ]);
    const total = (points: Point[]) => points.reduce((n, p) => n + p.samples, 0);
    expect(total(hours.points)).to.equal(total(days.points));

    const state = await call(edge, 'GET', `/v1/devices/${deviceId}/state`, { token: renewed });
    const produced = (state.body as { state: { capability: string; unit: string }[] }).state.find(
      (s) => s.capability === 'energy.produced_today',
    );
    expect(produced?.unit).to.equal('kWh');
  });
});
