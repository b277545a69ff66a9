import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import type { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import { createLogger } from '../../src/infra/logger.js';
import { catchUpProjector } from '../../src/projections/catch-up.js';
import { commandsProjector } from '../../src/projections/commands/projector.js';
import { smartPlug } from '../support/registry.js';
import { commandExpiryJob } from '../../src/scheduler/command-expiry.js';
import { controls, type Controls } from '../support/commands.js';
import type { TestDatabase } from '../support/database.js';
import { closeEventStore, openEventStore } from '../support/event-store.js';

describe('scheduler: command expiry at the TTL, by the server clock', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  let c: Controls;
  let deviceId: string;
  /** The job's clock: real time plus this. */
  let skewMs = 0;
  const leadership = new AbortController();

  before(async () => {
    ({ db, store } = await openEventStore());
    deviceId = await smartPlug(store, { projectId: 'prj_ttl', siteId: 'site_1', parentHubId: 'dev_hub' });
    c = controls(store, { projectId: 'prj_ttl' });
    await c.grant(deviceId, 'binary.switch');
  });
  after(async () => {
    leadership.abort();
    await closeEventStore({ db, store });
  });

  const job = () =>
    commandExpiryJob({
      store,
      pool: db.pool,
      logger: createLogger('silent'),
      now: () => new Date(Date.now() + skewMs),
    });
  const command = (ttlSeconds: number) =>
    c.command(deviceId, { capability: 'binary.switch', value: true, mode: 'imperative', ttlSeconds });

  it('a sweep expires what is pending past its TTL and leaves the rest', async () => {
    const cancelled = await command(30);
    await c.lifecycle(deviceId, 'suspended'); // cancels it: an outcome the expiry must not overwrite
    await c.lifecycle(deviceId, 'active');
    const pending = await command(30);
    const later = await command(3600);
    await catchUpProjector(db.pool, store, commandsProjector());

    skewMs = 31_000;
    await job().run(leadership.signal);
    expect(await c.status(deviceId, pending)).to.equal('expired');
    expect(await c.status(deviceId, later)).to.equal('queued');
    expect(await c.status(deviceId, cancelled)).to.equal('cancelled');
    const expired = (await c.commandEvents(deviceId, pending)).find((e) => e.type === 'CommandExpired')!;
    expect(expired.data).to.include({ commandId: pending, deviceId });
  });

  it('arms a timer for a TTL that ends before the next sweep, and expires it on time', async () => {
    skewMs = 0;
    const soon = await command(60);
    await catchUpProjector(db.pool, store, commandsProjector());
    // The job's clock set so the TTL ends 1.5 s from now: long enough for the job's start and the first status
    // read on a loaded machine, well short of the next sweep.
    const accepted = (await c.commandEvents(deviceId, soon)).find((e) => e.type === 'CommandAccepted')!;
    skewMs = Date.parse((accepted.data as { expiresAt: string }).expiresAt) - Date.now() - 1500;
    await job().run(leadership.signal);
    expect(await c.status(deviceId, soon), 'not before its TTL').to.equal('queued');
    const deadline = Date.now() + 5000;
    while ((await c.status(deviceId, soon)) !== 'expired' && Date.now() < deadline) await sleep(50);
    expect(await c.status(deviceId, soon)).to.equal('expired');
  });
});
