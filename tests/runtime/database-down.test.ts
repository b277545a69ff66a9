import { rm } from 'node:fs/promises';
import { expect } from 'chai';
import type { AckedMessage, EdgeSim } from '../../src/edge-sim/index.js';
import { createLogger } from '../../src/infra/logger.js';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/infra/postgres/embedded.js';
import { createLockPool, createPool } from '../../src/infra/postgres/pool.js';
import { connectedAgent, until } from '../support/edge-agent.js';
import { freePort } from '../../src/infra/ports.js';
import { startEdgeService, type EdgeService } from '../support/edge-service.js';
import { call, type Answer } from '../support/registry.js';
import { clusterDirectory } from '../support/run-directory.js';

const SEED = 5;
const DEVICES = 4;

/**
 * The whole service (api, ingress, projectors, scheduler) on a PostgreSQL cluster of its own, which the test
 * stops in the middle of traffic and starts again on the same data directory and port. While it is down,
 * every route that needs it answers 503 with Retry-After, /health names it, and the broker acknowledges
 * nothing (the agent keeps its outbox). Once it is back, every reading the agent sent is stored exactly once.
 */
describe('database down, end to end (a real PostgreSQL stopped mid-traffic)', function () {
  this.timeout(240_000);
  const logger = createLogger('silent');
  let dataDir: string;
  let port: number;
  let cluster: EmbeddedDatabase;
  let clusterRunning = false;
  let edge: EdgeService;
  let sim: EdgeSim | undefined;

  const startCluster = () => startEmbeddedPostgres({ dataDir, port, logger, databaseName: 'devcloud' });

  before(async () => {
    dataDir = await clusterDirectory('pgdown');
    port = await freePort();
    cluster = await startCluster();
    clusterRunning = true;
    const pool = createPool(cluster.url, { max: 20, applicationName: 'device-cloud-test' });
    const locks = createLockPool(cluster.url);
    const db = {
      url: cluster.url,
      pool,
      locks,
      drop: async () => {
        await Promise.all([pool.end().catch(() => {}), locks.end().catch(() => {})]);
      },
    };
    edge = await startEdgeService({ db });
  });
  after(async () => {
    await sim?.stop(1000);
    await edge?.close();
    if (clusterRunning) await cluster.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  function unavailable(answer: Answer, what: string) {
    expect(answer.status, `${what}: ${answer.text}`).to.equal(503);
    expect(answer.body, what).to.deep.equal({ error: 'transport_unavailable' });
    expect(answer.headers.get('retry-after'), what).to.match(/^\d+$/);
  }

  it('answers 503 with Retry-After and withholds PUBACKs while it is down, and loses nothing', async () => {
    const agent = await connectedAgent(edge, {
      timezone: 'Europe/Berlin',
      adoptFleet: true,
      sim: { devices: DEVICES, rate: 4, seed: SEED, dropRate: 0, backoff: { initialMs: 100, maxMs: 500 } },
      // Every route's scope, so each answer is about the database and not about the token.
      scopes: [
        'devices:read',
        'devices:write',
        'telemetry:read',
        'telemetry:live',
        'commands:read',
        'commands:write',
        'grants:admin',
      ],
    });
    sim = agent.sim;
    const acked: AckedMessage[] = [];
    sim.on('acked', (m: AckedMessage) => acked.push(m));
    await until('readings acknowledged', async () => (acked.length >= 10 ? true : undefined), 30_000);
    const { token } = agent;
    const devices = (await call(edge, 'GET', '/v1/devices', { token })).body as { devices: { id: string }[] };
    const deviceId = devices.devices[0]!.id;

    await cluster.stop();
    clusterRunning = false;

    // Every route that needs the database says so, as JSON, with Retry-After; nothing answers 500.
    const routes: [string, string, unknown?][] = [
      ['GET', '/v1/devices'],
      ['GET', `/v1/devices/${deviceId}`],
      ['GET', `/v1/devices/${deviceId}/state`],
      [
        'GET',
        `/v1/devices/${deviceId}/telemetry?capabilities=system.rssi&from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z`,
      ],
      ['GET', '/v1/sites'],
      ['GET', '/v1/bindings'],
      ['POST', '/v1/bindings', { deviceId, resourceType: 'room', resourceId: 'r1' }],
      ['POST', '/v1/pairing/sessions', { hubId: agent.hubId }],
      ['GET', '/v1/pairing/sessions/ps_missing'],
      ['POST', '/v1/pairing/sessions/ps_missing/adopt', { ieeeAddr: '0x00124b0000000001' }],
      ['POST', '/v1/pairing/sessions/ps_missing/reject', { ieeeAddr: '0x00124b0000000001' }],
      ['DELETE', '/v1/pairing/sessions/ps_missing'],
      ['GET', `/v1/devices/${deviceId}/capability-grants`],
      ['PUT', `/v1/devices/${deviceId}/capability-grants`, { capabilityKey: 'actuator.relay', write: true }],
      [
        'POST',
        `/v1/devices/${deviceId}/commands`,
        { capabilityKey: 'actuator.relay', value: true, mode: 'imperative', ttlSeconds: 60 },
      ],
      ['GET', `/v1/devices/${deviceId}/commands`],
      ['GET', '/v1/commands/cmd_missing'],
    ];
    for (const [method, route, body] of routes) {
      unavailable(await call(edge, method, route, { token, body }), `${method} ${route}`);
    }
    const tokenAnswer = await fetch(`${edge.baseUrl}/v1/oauth/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: 'cli_AAAAAAAAAAAAAAAAAAAAAA',
        client_secret: 'x',
      }),
    });
    expect(tokenAnswer.status, 'token endpoint').to.equal(503);
    expect(tokenAnswer.headers.get('retry-after')).to.match(/^\d+$/);

    const health = await call(edge, 'GET', '/health');
    expect(health.status).to.equal(503);
    expect(health.body).to.deep.include({ status: 'unavailable' });
    expect((health.body as { checks: { database: string } }).checks.database).to.equal('unreachable');

    // The broker acknowledges nothing while readings cannot be stored: the agent's outbox fills up.
    const ackedWhileDown = acked.length;
    await until(
      'the agent to hold unacknowledged readings',
      async () => (sim!.stats().queued >= 2 * DEVICES ? true : undefined),
      30_000,
    );
    expect(acked.length, 'no PUBACK while the database is down').to.equal(ackedWhileDown);

    const restarted = await startCluster();
    expect(restarted.url, 'same port and credentials').to.equal(cluster.url);
    cluster = restarted;
    clusterRunning = true;

    await until(
      '/health to recover',
      async () => {
        const answer = await call(edge, 'GET', '/health');
        return answer.status === 200 ? answer : undefined;
      },
      60_000,
    );
    await until(
      'acknowledgements to resume',
      async () => (acked.length > ackedWhileDown + DEVICES ? true : undefined),
      60_000,
    );
    expect((await call(edge, 'GET', '/v1/devices', { token })).status).to.equal(200);

    const stats = await sim.stop(10_000);
    sim = undefined;
    expect(stats.queued + stats.inflight, 'the outbox drained').to.equal(0);
    const { rows } = await edge.db.pool.query<{ device_id: string; seq: string; n: string }>(
      `SELECT data->>'deviceId' AS device_id, data->>'seq' AS seq, count(*) AS n
         FROM eventstore.events WHERE event_type = 'ReadingsRecorded' GROUP BY 1, 2`,
    );
    const stored = new Map(rows.map((r) => [`${r.device_id}/${r.seq}`, Number(r.n)]));
    const missing = acked.filter((m) => !stored.has(`${m.deviceId}/${m.seq}`));
    expect(missing, 'every acknowledged reading is stored').to.deep.equal([]);
    expect(
      [...stored.values()].filter((n) => n > 1),
      'no reading stored twice',
    ).to.deep.equal([]);
    expect(acked.length).to.be.greaterThan(ackedWhileDown);
  });
});
