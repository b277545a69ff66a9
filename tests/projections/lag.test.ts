import type { Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { createApiApp } from '../../src/api/app.js';
import { createHttpServer, listen } from '../../src/api/server.js';
import { loadConfig } from '../../src/config.js';
import type { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import { createLogger } from '../../src/infra/logger.js';
import { createMetrics } from '../../src/infra/metrics.js';
import { catchUpProjector, isCaughtUp, waitUntilProjectedThrough } from '../../src/projections/catch-up.js';
import { installProjector } from '../../src/projections/checkpoints.js';
import { measureLag } from '../../src/projections/lag.js';
import { ProjectionLagMonitor } from '../../src/projections/lag-monitor.js';
import { tallyProjector } from '../fixtures/tally-projector.js';
import type { TestDatabase } from '../support/database.js';
import { closeEventStore, openEventStore } from '../support/event-store.js';
import { checkedAgainstDocument } from '../support/openapi-conformance.js';

const logger = createLogger('silent');
const SCRAPER = 'metrics-scraper-token-for-lag-tests-0123456789';

describe('projection lag: measured from the store, on /health and /metrics', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  const tally = tallyProjector(['Ticked']);
  beforeEach(async () => {
    ({ db, store } = await openEventStore());
    await installProjector(db.pool, tally);
  });
  afterEach(() => closeEventStore({ db, store }));

  async function tick(count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      await store.append(`clock-${randomUUID()}`, [{ id: randomUUID(), type: 'Ticked', data: { i } }], 'any');
    }
    // Another type: the tally does not follow it, so it is never its lag.
    await store.append(`other-${randomUUID()}`, [{ id: randomUUID(), type: 'Tocked', data: {} }], 'any');
  }

  it('counts the waiting events of its types and the age of the oldest; none once projected', async () => {
    await tick(5);
    const [oldest] = await store.readStream((await store.readAll({ maxCount: 1 })).events[0]!.streamName);
    const now = new Date(oldest!.recordedAt.getTime() + 7_000);
    const behind = await measureLag(db.pool, store, tally, now);
    expect(behind.events).to.equal(5);
    expect(behind.seconds).to.be.closeTo(7, 0.001);
    expect(behind.oldestPendingAt?.getTime()).to.equal(oldest!.recordedAt.getTime());

    await catchUpProjector(db.pool, store, tally);
    const caughtUp = await measureLag(db.pool, store, tally, now);
    expect(caughtUp).to.deep.include({ events: 0, seconds: 0, oldestPendingAt: null });
  });

  it('is waited out up to a position: whatever is pending after it does not count', async () => {
    const tickAt = async () =>
      (await store.append(`clock-${randomUUID()}`, [{ id: randomUUID(), type: 'Ticked', data: {} }], 'any'))
        .position;
    const first = await tickAt();
    expect(await waitUntilProjectedThrough(db.pool, store, tally, first, 100), 'not applied yet').to.equal(
      false,
    );

    await catchUpProjector(db.pool, store, tally);
    const second = await tickAt();
    // Not caught up (the second event waits), yet everything up to the first is applied.
    expect(await isCaughtUp(db.pool, store, tally)).to.equal(false);
    expect(await waitUntilProjectedThrough(db.pool, store, tally, first, 100)).to.equal(true);
    expect(await waitUntilProjectedThrough(db.pool, store, tally, second, 100)).to.equal(false);

    // Nor does an event of another type at the position.
    await catchUpProjector(db.pool, store, tally);
    const other = await store.append(
      `other-${randomUUID()}`,
      [{ id: randomUUID(), type: 'Tocked', data: {} }],
      'any',
    );
    expect(await waitUntilProjectedThrough(db.pool, store, tally, other.position, 100)).to.equal(true);
  });

  it('answers degraded (still 200) past the threshold and exports the gauges', async () => {
    await tick(3);
    let clock = Date.now() + 60_000;
    const metrics = createMetrics();
    const monitor = new ProjectionLagMonitor({
      pool: db.pool,
      store,
      projectors: [tally, { name: 'state', eventTypes: ['Ticked'] }],
      intervalMs: 60_000,
      logger,
      metrics,
      now: () => clock,
    });
    await monitor.start();
    const config = loadConfig({
      DATABASE_URL: db.url,
      LOG_LEVEL: 'silent',
      PROJECTION_LAG_DEGRADED_SECONDS: '30',
      METRICS_TOKEN: SCRAPER,
    });
    const app = createApiApp({ config, logger, metrics, pool: db.pool, store, lag: monitor });
    const answering = checkedAgainstDocument(app, config.PUBLIC_BASE_URL);
    const server: Server = await listen(createHttpServer(answering, config), 0, '127.0.0.1');
    const address = server.address();
    const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    try {
      const degraded = await fetch(`${base}/health`);
      expect(degraded.status).to.equal(200);
      const body = (await degraded.json()) as {
        status: string;
        checks: { projections: Record<string, { status: string; lagEvents: number; lagSeconds: number }> };
      };
      expect(body.status).to.equal('degraded');
      expect(body.checks.projections.tally).to.deep.include({ status: 'behind', lagEvents: 3 });
      expect(body.checks.projections.tally!.lagSeconds).to.be.greaterThan(30);

      const text = await (
        await fetch(`${base}/metrics`, { headers: { Authorization: `Bearer ${SCRAPER}` } })
      ).text();
      expect(text).to.match(/devcloud_projection_lag_events\{projector="tally"\} 3/);
      expect(text).to.match(/devcloud_projection_lag_seconds\{projector="tally"\} (\d+\.?\d*)/);

      await catchUpProjector(db.pool, store, tally);
      clock = Date.now();
      await monitor.measure();
      const healthy = (await (await fetch(`${base}/health`)).json()) as { status: string };
      expect(healthy.status, 'the tally caught up; "state" is still behind but under 30 s').to.equal('ok');
      expect(
        await (await fetch(`${base}/metrics`, { headers: { Authorization: `Bearer ${SCRAPER}` } })).text(),
      ).to.match(/devcloud_projection_lag_events\{projector="tally"\} 0/);
    } finally {
      await monitor.stop();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
