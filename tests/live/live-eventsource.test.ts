import { expect } from 'chai';
import { EventSource, type FetchLike } from 'eventsource';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/infra/logger.js';
import { freePort } from '../../src/infra/ports.js';
import { startService, type RunningService } from '../../src/runtime/service.js';
import { databaseAndDirectoryForSuite } from '../support/database.js';
import { eventStoreOver } from '../support/event-store.js';
import { recordReadings } from '../support/readings.js';
import { projectWithClient, requestToken } from '../support/tenants.js';

const HOUR_MS = 3_600_000;

/**
 * A standard SSE client (the `eventsource` package, as docs/api.md "Using a standard SSE client" shows it):
 * the bearer header and its renewal live in the `fetch` option, because EventSource itself closes for good
 * on any answer but 200. Followed across a real restart of the API, after which its token has expired.
 */
describe('GET /v1/live with a standard SSE client (eventsource)', function () {
  this.timeout(120_000);
  let service: RunningService | undefined;
  let source: EventSource | undefined;

  const suite = databaseAndDirectoryForSuite('live-eventsource', async () => {
    source?.close();
    await service?.stop();
  });

  it('resumes across a restart of the service and a token renewal in its fetch option: no gap, no duplicate', async () => {
    const { db, dataDir } = suite;
    const port = await freePort();
    const config = loadConfig({
      DATABASE_URL: db.url,
      DATA_DIR: dataDir,
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: String(port),
      LOG_LEVEL: 'silent',
      SHUTDOWN_GRACE_MS: '1000',
    });
    const baseUrl = `http://127.0.0.1:${port}`;
    // The API alone: readings are appended to the store directly, as the ingestor would.
    const serve = (now?: () => number) => startService(config, createLogger('silent'), ['api'], { now });
    const store = eventStoreOver(db);
    const { projectId, client: credentials } = await projectWithClient(store, db.pool, ['telemetry:live'], {
      name: 'standard SSE client',
    });
    let value = 0;
    const readings = (messages: number) =>
      recordReadings(
        store,
        ...Array.from({ length: messages }, () => ({
          deviceId: 'dev_eventsource',
          projectId,
          receivedAt: new Date().toISOString(),
          readings: [1, 2, 3].map(() => ({ capability: 'environment.temperature', value: ++value })),
        })),
      );

    // What the application's backend does: a token kept until it fails, then one renewal and one retry.
    let token: string | undefined;
    const tokens: string[] = [];
    const statuses: number[] = [];
    const withToken: FetchLike = async (url, init) => {
      for (let attempt = 0; ; attempt++) {
        if (!token) tokens.push((token = await requestToken(baseUrl, credentials, 'post', undefined)));
        const response = await fetch(url, {
          ...init,
          headers: { ...init.headers, Authorization: `Bearer ${token}` },
        });
        statuses.push(response.status);
        if (response.status !== 401 || attempt > 0) return response;
        await response.body?.cancel();
        token = undefined;
      }
    };

    service = await serve();
    const received: { id: string; value: number }[] = [];
    const endings: string[] = [];
    source = new EventSource(`${baseUrl}/v1/live?types=telemetry`, { fetch: withToken });
    source.addEventListener('telemetry', (event) => {
      received.push({ id: event.lastEventId, value: (JSON.parse(event.data) as { value: number }).value });
    });
    source.addEventListener('stream_error', (event) => endings.push(event.data));
    await until('the stream to open', () => source!.readyState === EventSource.OPEN);
    await readings(3);
    await until('nine frames', () => received.length >= 9);

    // A restart: the streams end (stream_error shutdown), the client retries while nothing answers, and the
    // new process's clock is two hours on, so the token the client holds has expired there (401).
    await service.stop();
    service = undefined;
    expect(endings).to.deep.equal([JSON.stringify({ reason: 'shutdown' })]);
    await readings(2); // appended while no API process runs
    service = await serve(() => Date.now() + 2 * HOUR_MS);
    await until('the resumed stream', () => received.length >= 15, 60_000);
    await readings(2);
    await until('every frame', () => received.length >= 21);

    expect(statuses, 'the old token was refused once, then renewed').to.include(401);
    expect(tokens).to.have.length(2);
    expect(source.readyState, 'still following').to.not.equal(EventSource.CLOSED);
    expect(received.map((f) => f.value)).to.deep.equal(Array.from({ length: 21 }, (_, i) => i + 1));
    expect(new Set(received.map((f) => f.id)).size, 'no id twice').to.equal(21);
    source.close();
    await store.close();
  });
});

async function until(what: string, probe: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
