import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { readAgentFiles } from '../../src/agents/agent-files.js';
import { EdgeSim } from '../../src/edge-sim/index.js';
import { createProject } from '../../src/identity/projects.js';
import { controls, type Controls } from '../support/commands.js';
import { adoptedDeviceWith, connectedAgent, until } from '../support/edge-agent.js';
import { startEdgeService, type EdgeService } from '../support/edge-service.js';
import { openLive } from '../support/live.js';
import { call, siteOf } from '../support/registry.js';

const METRICS_TOKEN = 'operator-metrics-scraper-token-0123456789';
const SEED = 7;
const DEVICES = 2; // device 0 a weather sensor, device 1 a smart plug (binary.switch, S1)
const DASHBOARD = 'deploy/grafana/dashboards/device-cloud.json';

interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** Every sample of a Prometheus text exposition (labels without escaped quotes, as ours are). */
function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(/([a-zA-Z_]\w*)="([^"]*)"/g))
      labels[key!] = value!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/**
 * The series names a text exposition declares (`# TYPE`), whether or not they have a sample yet: a labelled
 * counter nothing has counted (no MQTT refusal in this run) is declared without one. A histogram declares
 * its _bucket, _sum and _count series.
 */
function declaredNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name!);
    if (type === 'histogram' || type === 'summary')
      for (const s of ['_bucket', '_sum', '_count']) names.add(name! + s);
  }
  return names;
}

/**
 * The metric names a PromQL expression selects: what is left once strings, label matchers, ranges,
 * groupings, functions, keywords and numbers are taken out.
 */
function metricNamesOf(expression: string): string[] {
  const bare = expression
    .replace(/"(?:[^"\\]|\\.)*"/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\boffset\s+\S+/g, ' ');
  const keywords = new Set(['and', 'or', 'unless', 'bool', 'inf', 'nan']);
  const names = new Set<string>();
  for (const match of bare.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const following = bare.slice(match.index + match[0].length).trimStart();
    if (following.startsWith('(') || keywords.has(match[0].toLowerCase())) continue;
    if (/^\d/.test(bare.slice(match.index - 1, match.index))) continue; // 5m, 1e3
    names.add(match[0]);
  }
  return [...names];
}

/** Every PromQL expression of the dashboard's panels (rows' panels included). */
function dashboardExpressions(): string[] {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[] };
  interface Panel {
    targets?: { expr?: string }[];
    panels?: Panel[];
  }
  const walk = (panels: Panel[]): string[] =>
    panels.flatMap((p) => [
      ...(p.targets ?? []).map((t) => t.expr).filter((e): e is string => typeof e === 'string'),
      ...walk(p.panels ?? []),
    ]);
  return walk(dashboard.panels);
}

/**
 * What an operator watches, each seen to change after the real action on the whole service (every role in
 * one process, the real mTLS broker and the reference agent), read from GET /metrics as Prometheus would.
 */
describe('operator metrics on GET /metrics: live streams, commands, connected agents', function () {
  this.timeout(180_000);
  let edge: EdgeService;
  let sim: EdgeSim;
  let token: string;
  let plug: string;
  let c: Controls;
  let scraped: Sample[] = [];
  let exposition = '';

  const scrape = async () => {
    const res = await fetch(`${edge.baseUrl}/metrics`, {
      headers: { Authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(res.status).to.equal(200);
    exposition = await res.text();
    scraped = parseExposition(exposition);
    return scraped;
  };
  /** The sum of the samples of `name` carrying at least `labels`, in a fresh scrape (0 when none). */
  const value = async (name: string, labels: Record<string, string> = {}) =>
    (await scrape())
      .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
      .reduce((sum, s) => sum + s.value, 0);
  const becomes = (name: string, labels: Record<string, string>, expected: number) =>
    until(`${name}${JSON.stringify(labels)} = ${expected}`, async () =>
      (await value(name, labels)) === expected ? true : undefined,
    );

  before(async () => {
    edge = await startEdgeService({ settings: { METRICS_TOKEN } });
    const agent = await connectedAgent(edge, {
      timezone: 'Europe/Berlin',
      sim: { devices: DEVICES, rate: 0.3, seed: SEED, backoff: { initialMs: 100, maxMs: 1000 } },
      scopes: ['devices:read', 'commands:write', 'commands:read', 'telemetry:live'],
    });
    ({ sim, token } = agent);
    plug = await adoptedDeviceWith(edge, agent, { seed: SEED, devices: DEVICES }, 'binary.switch');
    c = controls(edge.store, { projectId: agent.projectId });
    await c.grant(plug, 'binary.switch');
  });
  after(async () => {
    await sim?.stop(1000);
    await edge?.close();
  });

  it('live streams: the open gauge, frames sent by type, and ends by reason', async () => {
    const framesBefore = await value('devcloud_live_frames_sent_total');
    const closedBefore = await value('devcloud_live_stream_ends_total', { reason: 'client_closed' });
    expect(await value('devcloud_live_streams_open')).to.equal(0);

    const live = await openLive(edge.baseUrl, { token, query: 'types=telemetry' });
    expect(live.status).to.equal(200);
    await becomes('devcloud_live_streams_open', {}, 1);
    // The simulator's readings reach the stream as telemetry frames.
    await live.waitFor('a telemetry frame', () => live.frames('telemetry').length, 30_000);
    const sent = live.frames('telemetry').length;
    expect(await value('devcloud_live_frames_sent_total', { type: 'telemetry' })).to.be.at.least(
      framesBefore + sent,
    );

    live.close();
    await becomes('devcloud_live_streams_open', {}, 0);
    expect(await value('devcloud_live_stream_ends_total', { reason: 'client_closed' })).to.equal(
      closedBefore + 1,
    );
  });

  it('live streams: a resume counts, and a replay_gap by its reason', async () => {
    const resumes = await value('devcloud_live_resumes_total');
    const gaps = await value('devcloud_live_replay_gaps_total', { reason: 'unknown_id' });
    const live = await openLive(edge.baseUrl, { token, headers: { 'Last-Event-ID': 'not-one-of-ours' } });
    await live.waitFor('the replay_gap', () => live.frames('replay_gap').length);
    expect(live.frames('replay_gap')[0]!.data.reason).to.equal('unknown_id');
    expect(await value('devcloud_live_resumes_total')).to.equal(resumes + 1);
    expect(await value('devcloud_live_replay_gaps_total', { reason: 'unknown_id' })).to.equal(gaps + 1);
    live.close();
    await becomes('devcloud_live_streams_open', {}, 0);
  });

  it('commands: accepted, sent and acknowledged with their delays, and refusals by reason', async () => {
    const counts = async () => ({
      accepted: await value('devcloud_commands_accepted_total'),
      sent: await value('devcloud_commands_sent_total', { attempt: 'first' }),
      sendDelays: await value('devcloud_command_send_delay_seconds_count'),
      succeeded: await value('devcloud_commands_acknowledged_total', { outcome: 'succeeded' }),
      ackDelays: await value('devcloud_command_ack_delay_seconds_count', { outcome: 'succeeded' }),
      refused: await value('devcloud_commands_refused_total', { reason: 'device_not_addressable' }),
    });
    const before = await counts();

    const accepted = await call(edge, 'POST', `/v1/devices/${plug}/commands`, {
      token,
      body: { capabilityKey: 'binary.switch', value: true, mode: 'imperative', ttlSeconds: 60 },
    });
    expect(accepted.status, accepted.text).to.equal(201);
    const { commandId } = (accepted.body as { command: { commandId: string } }).command;
    await until('the command succeeded', async () =>
      (await c.status(plug, commandId)) === 'succeeded' ? true : undefined,
    );
    // The ack's metrics follow its append, before the agent's PUBACK: seen by the time the status is.
    const after = await until('the ack counted', async () => {
      const now = await counts();
      return now.ackDelays > before.ackDelays ? now : undefined;
    });
    expect(after.accepted).to.equal(before.accepted + 1);
    expect(after.sent).to.equal(before.sent + 1);
    expect(after.sendDelays).to.equal(before.sendDelays + 1);
    expect(after.succeeded).to.equal(before.succeeded + 1);
    expect(after.ackDelays).to.equal(before.ackDelays + 1);

    const refused = await call(edge, 'POST', `/v1/devices/dev_nothing_here/commands`, {
      token,
      body: { capabilityKey: 'binary.switch', value: true, mode: 'imperative', ttlSeconds: 60 },
    });
    expect(refused.status).to.equal(403);
    expect((refused.body as { reasons: string[] }).reasons).to.deep.equal(['device_not_addressable']);
    expect((await counts()).refused).to.equal(before.refused + 1);
    expect((await counts()).accepted, 'a refusal is not an acceptance').to.equal(before.accepted + 1);

    // A repeat of the same idempotency key is answered, not accepted again.
    const keyed = {
      capabilityKey: 'binary.switch',
      value: false,
      mode: 'imperative',
      ttlSeconds: 60,
      idempotencyKey: 'metrics-repeat-1',
    };
    for (let i = 0; i < 2; i++) {
      const answer = await call(edge, 'POST', `/v1/devices/${plug}/commands`, { token, body: keyed });
      expect(answer.status, answer.text).to.equal(201);
    }
    expect(await value('devcloud_commands_accepted_total')).to.equal(before.accepted + 2);
  });

  it('every metric the Grafana dashboard queries is one the service exports', async () => {
    await scrape();
    const exported = declaredNames(exposition);
    for (const { name } of scraped) expect(exported, 'every sample is declared').to.include(name);
    const expressions = dashboardExpressions();
    expect(expressions.length).to.be.greaterThan(15);
    const queried = new Set(expressions.flatMap(metricNamesOf));
    for (const name of [
      'devcloud_live_streams_open',
      'devcloud_commands_refused_total',
      'devcloud_command_send_delay_seconds_bucket',
      'devcloud_agents_connected',
    ])
      expect(queried, 'the dashboard shows the new metrics').to.include(name);
    const missing = [...queried].filter((name) => !exported.has(name));
    expect(missing, 'queried by the dashboard, absent from /metrics').to.deep.equal([]);
  });

  it('connected agents: 1 while the agent is connected, 0 once it has gone', async () => {
    expect(await value('devcloud_agents_connected')).to.equal(1);
    await sim.stop(1000);
    await becomes('devcloud_agents_connected', {}, 0);
  });

  it('live streams: a stream the server ends counts under its stream_error reason', async () => {
    const shutdowns = await value('devcloud_live_stream_ends_total', { reason: 'shutdown' });
    const live = await openLive(edge.baseUrl, { token });
    await becomes('devcloud_live_streams_open', {}, 1);
    await edge.live.close();
    await live.ended;
    expect(live.raw()).to.include('event: stream_error');
    expect(await value('devcloud_live_stream_ends_total', { reason: 'shutdown' })).to.equal(shutdowns + 1);
    expect(await value('devcloud_live_streams_open')).to.equal(0);
  });
});

describe('metricNamesOf (the dashboard test reads PromQL this way)', () => {
  it('finds the selected metrics and nothing else', () => {
    expect(
      metricNamesOf(
        'histogram_quantile(0.95, sum by (le, route) (rate(devcloud_http_request_duration_seconds_bucket{route!="/metrics"}[$__rate_interval])))',
      ),
    ).to.deep.equal(['devcloud_http_request_duration_seconds_bucket']);
    expect(
      metricNamesOf('sum(devcloud_live_streams_open) or vector(0) + max without (instance) (up offset 5m)'),
    ).to.deep.equal(['devcloud_live_streams_open', 'up']);
  });
});

/**
 * With roles in separate processes, an ingress process has no API, yet it alone knows its connected agents
 * and the commands it sends: with METRICS_TOKEN set it serves its own GET /metrics, and nothing else.
 */
describe('GET /metrics of a process without the api role', function () {
  this.timeout(180_000);
  let ingress: EdgeService;
  let sim: EdgeSim | undefined;

  before(async () => {
    ingress = await startEdgeService({ roles: ['ingress'], settings: { METRICS_TOKEN } });
  });
  after(async () => {
    await sim?.stop(1000);
    await ingress?.close();
  });

  it('answers with the token only, serves nothing but /metrics, and counts the agents connected to it', async () => {
    const url = `http://127.0.0.1:${ingress.service.httpPort}`;
    expect((await fetch(`${url}/metrics`)).status).to.equal(401);
    const headers = { Authorization: `Bearer ${METRICS_TOKEN}` };
    expect((await fetch(`${url}/health`, { headers })).status).to.equal(404);
    expect((await fetch(`${url}/v1/devices`, { headers })).status).to.equal(404);
    const agents = async () => {
      const res = await fetch(`${url}/metrics`, { headers });
      expect(res.status).to.equal(200);
      const sample = parseExposition(await res.text()).find((s) => s.name === 'devcloud_agents_connected');
      return sample?.value;
    };
    expect(await agents()).to.equal(0);

    const { projectId } = await createProject(ingress.store, { name: 'ingress metrics' });
    const siteId = await siteOf(ingress, projectId, 'Site', 'Europe/Berlin');
    const dir = path.join(ingress.dataDir, 'agent');
    await ingress.cli('agent', 'create', '--project', projectId, '--site', siteId, '--out', dir);
    await ingress.catchUp();
    sim = new EdgeSim({ devices: 1, rate: 0.3, seed: SEED, files: await readAgentFiles(dir) });
    const connected = once(sim, 'connected');
    sim.start();
    await connected;
    await until('the agent counted', async () => ((await agents()) === 1 ? true : undefined));
  });
});
