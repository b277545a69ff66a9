import { expect } from 'chai';
import type { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import { ConnectivityRecorder, connectivityStreamName } from '../../src/ingress/connectivity.js';
import type { TestDatabase } from '../support/database.js';
import { closeEventStore, openEventStore } from '../support/event-store.js';

describe('connectivity recorder', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;

  before(async () => {
    ({ db, store } = await openEventStore());
  });
  after(async () => {
    await closeEventStore({ db, store });
  });

  const states = async (deviceId: string) =>
    (await store.readStream(connectivityStreamName(deviceId))).map(
      (e) => (e.data as { connectivity: string }).connectivity,
    );

  it('records a change only when the connectivity changes', async () => {
    const recorder = new ConnectivityRecorder(store);
    const at = new Date();
    await recorder.record('prj_1', ['dev_a', 'dev_b'], 'online', 'agent_connected', at);
    await recorder.record('prj_1', ['dev_a'], 'online', 'device_reported', at);
    await recorder.record('prj_1', ['dev_a', 'dev_b'], 'unreachable', 'agent_offline', at);
    await recorder.record('prj_1', ['dev_a', 'dev_b'], 'unreachable', 'agent_offline', at);
    expect(await states('dev_a')).to.deep.equal(['online', 'unreachable']);
    expect(await states('dev_b')).to.deep.equal(['online', 'unreachable']);
  });

  it('holds across recorders that race (two ingress instances): each change is recorded once', async () => {
    const a = new ConnectivityRecorder(store);
    const b = new ConnectivityRecorder(store);
    const at = new Date();
    await Promise.all([
      a.record('prj_1', ['dev_c'], 'online', 'agent_connected', at),
      b.record('prj_1', ['dev_c'], 'online', 'agent_connected', at),
    ]);
    // b remembers nothing of a's later change, yet does not record "offline" twice.
    await a.record('prj_1', ['dev_c'], 'offline', 'device_reported', at);
    await b.record('prj_1', ['dev_c'], 'offline', 'device_reported', at);
    expect(await states('dev_c')).to.deep.equal(['online', 'offline']);
  });
});
