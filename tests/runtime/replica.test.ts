import { rm } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { setCapabilityGrant } from '../../src/control/grants.js';
import { createLogger } from '../../src/infra/logger.js';
import {
  startEmbeddedPostgres,
  startEmbeddedStandby,
  type EmbeddedDatabase,
} from '../../src/infra/postgres/embedded.js';
import { freePort } from '../../src/infra/ports.js';
import { grantsOfDevice } from '../../src/projections/grants/queries.js';
import { deviceOf, siteOf } from '../support/registry.js';
import { startService, type RunningService } from '../../src/runtime/service.js';
import { until } from '../support/edge-agent.js';
import { clusterDirectory } from '../support/run-directory.js';
import { projectWithClient, requestToken } from '../support/tenants.js';

const RELAY = 'actuator.relay';

/**
 * An API node whose queries go to a real streaming replica of its database (DATABASE_REPLICA_URL): both
 * are embedded clusters of this test's own, whatever DATABASE_URL the run has, since a replica is made from
 * its primary's files. The replica's replay is paused to show where each read and each wait goes.
 */
describe('read-model queries from a streaming replica', function () {
  this.timeout(120_000);
  const logger = createLogger('silent');
  let dir: string;
  let primary: EmbeddedDatabase | undefined;
  let standby: EmbeddedDatabase | undefined;
  let service: RunningService | undefined;
  let replicaAdmin: pg.Client | undefined;

  before(async () => {
    dir = await clusterDirectory('replica');
    primary = await startEmbeddedPostgres({
      dataDir: path.join(dir, 'primary'),
      port: await freePort(),
      logger,
    });
    standby = await startEmbeddedStandby({
      primaryDataDir: path.join(dir, 'primary'),
      primaryUrl: primary.url,
      dataDir: path.join(dir, 'standby'),
      logger,
    });
  });
  after(async () => {
    await replicaAdmin?.end();
    await service?.stop();
    await standby?.stop();
    await primary?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers a write once the replica has projected it, and reads from the replica', async () => {
    const config = loadConfig({
      DATABASE_URL: primary!.url,
      DATABASE_REPLICA_URL: standby!.url,
      DATA_DIR: path.join(dir, 'data'),
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: '0',
      LOG_LEVEL: 'error',
    });
    service = await startService(config, logger, ['api', 'projector']);
    const { store } = service;
    const base = `http://127.0.0.1:${service.httpPort}`;
    replicaAdmin = new pg.Client({ connectionString: standby!.url });
    await replicaAdmin.connect();
    const { rows: recovery } = await replicaAdmin.query('SELECT pg_is_in_recovery() AS standby');
    expect(recovery[0].standby, 'the replica is a standby').to.equal(true);

    const { projectId, client } = await projectWithClient(
      store,
      service.database.pool,
      ['devices:read', 'grants:revoke', 'grants:admin'],
      { name: 'replica' },
    );
    const siteId = await siteOf({ store }, projectId, 'Plant', 'Europe/Paris');
    const deviceId = await deviceOf({ store }, projectId, siteId, {
      productModel: 'Relay-1',
      capabilities: [RELAY],
      profile: 'verified',
    });
    const token = await requestToken(base, client, 'post', undefined);
    const call = (method: string, body?: unknown) =>
      fetch(`${base}/v1/devices/${deviceId}/capability-grants`, {
        method,
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const relayWrite = async () => {
      const answer = await call('GET');
      if (answer.status !== 200) return undefined;
      const { grants } = (await answer.json()) as { grants: { capabilityKey: string; write: boolean }[] };
      return grants.find((g) => g.capabilityKey === RELAY)?.write;
    };
    const onPrimary = async () =>
      (await grantsOfDevice(service!.database.pool, projectId, deviceId)).find((g) => g.capability === RELAY)
        ?.state;
    await until('the device readable through the replica', async () =>
      (await relayWrite()) === false ? true : undefined,
    );

    // 1. A write waits on the replica's checkpoint, not the primary's.
    await pauseReplay();
    let answered = false;
    const sentAt = Date.now();
    const put = call('PUT', { capabilityKey: RELAY, write: true }).then((answer) => {
      answered = true;
      return answer;
    });
    await until('the grant projected on the primary', async () =>
      (await onPrimary()) === 'granted' ? true : undefined,
    );
    // The write must still not answer a while after the primary has its projection: up to 1 s, but only
    // until 2.5 s after it was sent, as the wait gives up at 3 s (a slow projection on the primary must not
    // use that up); a wait on the primary would be over at once.
    await sleep(Math.max(200, Math.min(1_000, 2_500 - (Date.now() - sentAt))));
    expect(answered, 'answered before the replica had the grant').to.equal(false);
    await replicaAdmin.query('SELECT pg_wal_replay_resume()');
    expect((await put).status).to.equal(200);
    expect(await relayWrite(), 'read back right after the write').to.equal(true);

    // 2. Reads come from the replica: while it is paused they do not see what the primary has.
    await pauseReplay();
    await setCapabilityGrant(store, {
      projectId,
      clientId: client.clientId,
      deviceId,
      capabilityKey: RELAY,
      write: false,
      now: new Date(),
    });
    await until('the revocation projected on the primary', async () =>
      (await onPrimary()) === 'revoked' ? true : undefined,
    );
    expect(await relayWrite(), 'read while the replica is paused').to.equal(true);
    await replicaAdmin.query('SELECT pg_wal_replay_resume()');
    await until('the revocation read through the replica', async () =>
      (await relayWrite()) === false ? true : undefined,
    );

    const health = (await (await fetch(`${base}/health`)).json()) as { checks: Record<string, unknown> };
    expect(health.checks).to.include({ database: 'ok', replica: 'ok' });

    // A node whose replica is gone cannot answer its queries: it says so, and is taken out of rotation.
    await replicaAdmin.end();
    replicaAdmin = undefined;
    await standby!.stop();
    standby = undefined;
    const down = await fetch(`${base}/health`);
    expect(down.status).to.equal(503);
    expect(((await down.json()) as { checks: Record<string, unknown> }).checks).to.include({
      database: 'ok',
      replica: 'unreachable',
    });
    const query = await call('GET');
    expect(query.status, 'a query with its replica down').to.equal(503);
    expect(query.headers.get('retry-after')).to.match(/^\d+$/);
  });

  async function pauseReplay() {
    await replicaAdmin!.query('SELECT pg_wal_replay_pause()');
    await until('replay paused', async () => {
      const { rows } = await replicaAdmin!.query<{ state: string }>(
        'SELECT pg_get_wal_replay_pause_state() AS state',
      );
      return rows[0]!.state === 'paused' ? true : undefined;
    });
  }
});
