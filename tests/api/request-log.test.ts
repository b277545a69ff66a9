import type { Server } from 'node:http';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { createApiApp } from '../../src/api/app.js';
import { createHttpServer, listen } from '../../src/api/server.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/infra/logger.js';
import { createMetrics } from '../../src/infra/metrics.js';
import { closeEventStore, openEventStore, type RunningEventStore } from '../support/event-store.js';
import { checkedAgainstDocument } from '../support/openapi-conformance.js';

/** A token-shaped string, like a leaked access token: header.payload.signature, base64url. */
const JWT =
  'eyJhbGciOiJFUzI1NiIsInR5cCI6ImF0K2p3dCJ9.eyJzdWIiOiJjbGlfeCIsInNjb3BlIjoiZGV2aWNlczpyZWFkIn0.c2lnbmF0dXJlLXNlY3JldA';
const CLIENT_SECRET = `dcs_${'Q'.repeat(43)}`;

describe('the request log line', () => {
  let running: RunningEventStore;
  let server: Server;
  let baseUrl: string;
  const lines: string[] = [];

  before(async () => {
    running = await openEventStore();
    const config = loadConfig({
      DATABASE_URL: running.db.url,
      HTTP_PORT: '0',
      HTTP_HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
    });
    const sink = new Writable({
      write(chunk: Buffer | string, _encoding, done) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    const logger = createLogger('info', sink);
    const app = createApiApp({
      config,
      logger,
      metrics: createMetrics(),
      pool: running.db.pool,
      store: running.store,
    });
    server = await listen(
      createHttpServer(checkedAgainstDocument(app, config.PUBLIC_BASE_URL), config),
      0,
      '127.0.0.1',
    );
    const address = server.address();
    baseUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });
  after(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await closeEventStore(running ?? {});
  });

  /** Sends one request and returns the path its request line logged. */
  async function loggedPath(path: string): Promise<string> {
    const response = await fetch(baseUrl + path, { signal: AbortSignal.timeout(10_000) });
    await response.text();
    const requestId = response.headers.get('x-request-id');
    for (let waited = 0; waited < 5_000; waited += 10) {
      const line = lines
        .map((text) => JSON.parse(text) as { requestId?: string; msg?: string; path?: string })
        .find((entry) => entry.requestId === requestId && entry.msg === 'request');
      if (line) return line.path!;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error(`no request line for ${path}`);
  }

  for (const [label, path, secret, kept] of [
    [
      'an access token smuggled into the path',
      `/v1/live%3Faccess_token=${JWT}`,
      JWT,
      '/v1/live%3Faccess_token=',
    ],
    ['a bare JWT as a path segment', `/v1/devices/${JWT}`, JWT, '/v1/devices/'],
    ['a JWT with an encoded key', `/v1/live%3Faccess_token%3D${JWT}`, JWT, '/v1/live%3Faccess_token%3D'],
    ['token= with an opaque value', '/v1/live;token=opaque-value-123', 'opaque-value-123', '/v1/live;token='],
    ['client_secret=', `/v1/oauth/x%3Fclient_secret=${CLIENT_SECRET}`, CLIENT_SECRET, 'client_secret='],
    ['a client secret alone', `/v1/x/${CLIENT_SECRET}/y`, CLIENT_SECRET, '/v1/x/'],
  ] as const) {
    it(`redacts ${label}`, async () => {
      const logged = await loggedPath(path);
      expect(logged).to.include(kept);
      expect(logged).to.include('[redacted]');
      expect(logged).not.to.include(secret);
      // Not even a piece of it: the signature and the payload are what make it usable.
      for (const piece of secret.split('.')) expect(logged).not.to.include(piece);
    });
  }

  it('keeps what is not secret, and never logs the query string', async () => {
    expect(await loggedPath('/v1/devices/dev_abc/commands')).to.equal('/v1/devices/dev_abc/commands');
    expect(await loggedPath('/v1/oauth/token')).to.equal('/v1/oauth/token');
    const logged = await loggedPath(`/v1/live?access_token=${JWT}`);
    expect(logged).to.equal('/v1/live');
    expect(lines.join('\n')).not.to.include(JWT.split('.')[2]);
  });
});
