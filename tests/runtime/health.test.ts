import { createServer, type Server } from 'node:http';
import { expect } from 'chai';
import { createApiApp } from '../../src/api/app.js';
import { loadConfig } from '../../src/config.js';
import { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import { createLogger } from '../../src/infra/logger.js';
import { createMetrics } from '../../src/infra/metrics.js';
import { createPool } from '../../src/infra/postgres/pool.js';
import { allProjectors } from '../../src/runtime/projectors.js';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import { checkedAgainstDocument } from '../support/openapi-conformance.js';

describe('GET /health and GET /metrics', () => {
  let api: TestApi;
  const metricsToken = 'metrics-scraper-token-for-tests-0123456789';
  before(async () => {
    api = await startTestApi({ METRICS_TOKEN: metricsToken });
  });
  after(async () => {
    await api.close();
  });

  it('answers 200 without auth when the database and the event store answer', async () => {
    const res = await fetch(`${api.baseUrl}/health`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('cache-control')).to.equal('no-store');
    expect(res.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
    const body = (await res.json()) as {
      status: string;
      checks: { database: string; eventStore: unknown; projections: Record<string, { status: string }> };
    };
    expect(body.status).to.equal('ok');
    expect(body.checks.database).to.equal('ok');
    expect(body.checks.eventStore).to.deep.equal({ kind: 'postgres', status: 'ok' });
    expect(Object.keys(body.checks.projections).sort()).to.deep.equal(
      allProjectors()
        .map((p) => p.name)
        .sort(),
    );
    expect(Object.values(body.checks.projections).map((p) => p.status)).to.satisfy((s: string[]) =>
      s.every((status) => status === 'ok'),
    );
  });

  it('echoes a well-formed X-Request-Id and replaces a malformed one', async () => {
    const kept = await fetch(`${api.baseUrl}/health`, { headers: { 'X-Request-Id': 'trace-42' } });
    expect(kept.headers.get('x-request-id')).to.equal('trace-42');
    const replaced = await fetch(`${api.baseUrl}/health`, {
      headers: { 'X-Request-Id': 'bad id\twith spaces' },
    });
    expect(replaced.headers.get('x-request-id')).to.not.equal('bad id\twith spaces');
  });

  it('serves Prometheus metrics, including request counts', async () => {
    await fetch(`${api.baseUrl}/health`);
    const res = await fetch(`${api.baseUrl}/metrics`, {
      headers: { Authorization: `Bearer ${metricsToken}` },
    });
    expect(res.status).to.equal(200);
    const text = await res.text();
    expect(text).to.match(/devcloud_http_requests_total\{method="GET",route="\/health",status="200"\} \d+/);
    expect(text).to.include('process_cpu_user_seconds_total');
  });

  it('answers 503 naming the dependency when the database is unreachable', async () => {
    const url = 'postgres://postgres@127.0.0.1:1/nowhere';
    const pool = createPool(url, { max: 1 });
    const store = new PostgresEventStore(pool, { connectionString: url });
    const config = loadConfig({ DATABASE_URL: url });
    const app = createApiApp({
      config,
      logger: createLogger('silent'),
      metrics: createMetrics(),
      pool,
      store,
    });
    const server = await new Promise<Server>((resolve) => {
      const s = createServer(checkedAgainstDocument(app, config.PUBLIC_BASE_URL));
      s.listen(0, '127.0.0.1', () => resolve(s));
    });
    try {
      const port = (server.address() as { port: number }).port;
      const res = await fetch(`http://127.0.0.1:${port}/health`);
      expect(res.status).to.equal(503);
      expect(await res.json()).to.deep.equal({
        status: 'unavailable',
        checks: { database: 'unreachable', eventStore: { kind: 'postgres', status: 'unreachable' } },
      });
    } finally {
      server.close();
      await pool.end();
    }
  });
});
