import { expect } from 'chai';
import sinon from 'sinon';
import { ConnectivityRecorder, connectivityStreamName } from '../../src/ingress/connectivity.js';
import { eventStoreForSuite } from '../support/event-store.js';

describe('connectivity recorder', () => {
  const suite = eventStoreForSuite();

  const states = async (deviceId: string) =>
    (await suite.store.readStream(connectivityStreamName(deviceId))).map(
      (e) => (e.data as { connectivity: string }).connectivity,
    );

  it('records a change only when the connectivity changes', async () => {
    const recorder = new ConnectivityRecorder(suite.store);
    const at = new Date();
    await recorder.record('prj_1', ['dev_a', 'dev_b'], 'online', 'agent_connected', at);
    await recorder.record('prj_1', ['dev_a'], 'online', 'device_reported', at);
    await recorder.record('prj_1', ['dev_a', 'dev_b'], 'unreachable', 'agent_offline', at);
    await recorder.record('prj_1', ['dev_a', 'dev_b'], 'unreachable', 'agent_offline', at);
    expect(await states('dev_a')).to.deep.equal(['online', 'unreachable']);
    expect(await states('dev_b')).to.deep.equal(['online', 'unreachable']);
  });

  it('holds across recorders that race (two ingress instances): each change is recorded once', async () => {
    const a = new ConnectivityRecorder(suite.store);
    const b = new ConnectivityRecorder(suite.store);
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

  const hubEvents = async (deviceId: string) =>
    (await suite.store.readStream(connectivityStreamName(deviceId))).map((e) => {
      const data = e.data as { connectivity?: string; connectionId?: string };
      const what = e.type === 'HubConnectionReplaced' ? 'replaced' : data.connectivity;
      return `${what} ${data.connectionId ?? '-'}`;
    });

  it('fences the end of an older connection: the hub stays online through its newer one', async () => {
    const recorder = new ConnectivityRecorder(suite.store);
    const at = new Date();
    const first = { hubId: 'hub_f', connectionId: 'c1' };
    const second = { hubId: 'hub_f', connectionId: 'c2' };
    expect(
      await recorder.record('prj_1', ['hub_f', 'dev_f'], 'online', 'agent_connected', at, first),
    ).to.equal(true);
    // The agent connects again before its first connection's end is known: the new connection goes on record.
    await recorder.record('prj_1', ['hub_f', 'dev_f'], 'online', 'agent_connected', at, second);
    expect(await recorder.record('prj_1', ['hub_f'], 'offline', 'agent_offline', at, first)).to.equal(false);
    expect(await recorder.record('prj_1', ['dev_f'], 'unreachable', 'agent_offline', at, first)).to.equal(
      false,
    );
    expect(await hubEvents('hub_f')).to.deep.equal(['online c1', 'replaced c2']);
    expect(await states('dev_f')).to.deep.equal(['online']);
    // Its own end is recorded; a will that never named its connection is not fenced.
    expect(await recorder.record('prj_1', ['hub_f'], 'offline', 'agent_offline', at, second)).to.equal(true);
    expect(await hubEvents('hub_f')).to.deep.equal(['online c1', 'replaced c2', 'offline c2']);
    await recorder.record('prj_1', ['hub_f'], 'online', 'agent_connected', at, {
      hubId: 'hub_f',
      connectionId: 'c3',
    });
    expect(
      await recorder.record('prj_1', ['hub_f'], 'offline', 'last_will', at, {
        hubId: 'hub_f',
        connectionId: undefined,
      }),
    ).to.equal(true);
    expect((await hubEvents('hub_f')).at(-1)).to.equal('offline -');
  });

  it('fences across nodes: a node that remembers the old connection re-reads on conflict and records nothing', async () => {
    const old = new ConnectivityRecorder(suite.store); // the node the agent left, or the one publishing its will
    const now = new ConnectivityRecorder(suite.store); // the node the agent is connected to
    const at = new Date();
    await old.record('prj_1', ['hub_g', 'dev_g'], 'online', 'agent_connected', at, {
      hubId: 'hub_g',
      connectionId: 'a',
    });
    await now.record('prj_1', ['hub_g', 'dev_g'], 'online', 'agent_connected', at, {
      hubId: 'hub_g',
      connectionId: 'b',
    });
    const appends = sinon.spy(suite.store, 'appendMany');
    try {
      expect(
        await old.record('prj_1', ['hub_g'], 'offline', 'agent_offline', at, {
          hubId: 'hub_g',
          connectionId: 'a',
        }),
      ).to.equal(false);
      // It did try on what it remembered, and the store refused: the fence held on the re-read.
      expect(appends.callCount, 'appends tried from the stale memory').to.equal(1);
    } finally {
      appends.restore();
    }
    expect(await hubEvents('hub_g')).to.deep.equal(['online a', 'replaced b']);
  });

  it('records a new connection of a hub online on record without a connectivity change (device_status is a change)', async () => {
    const recorder = new ConnectivityRecorder(suite.store);
    const at = new Date();
    for (const connectionId of ['r1', 'r2', 'r3'])
      await recorder.record('prj_1', ['hub_r', 'dev_r'], 'online', 'agent_connected', at, {
        hubId: 'hub_r',
        connectionId,
      });
    await recorder.record('prj_1', ['hub_r'], 'offline', 'agent_offline', at, {
      hubId: 'hub_r',
      connectionId: 'r3',
    });
    // Every DeviceConnectivityChanged (each one a device_status frame) changes the connectivity.
    const changes = (await suite.store.readStream(connectivityStreamName('hub_r')))
      .filter((e) => e.type === 'DeviceConnectivityChanged')
      .map((e) => (e.data as { connectivity: string }).connectivity);
    expect(changes).to.deep.equal(['online', 'offline']);
    expect(await hubEvents('hub_r')).to.deep.equal(['online r1', 'replaced r2', 'replaced r3', 'offline r3']);
    expect(await states('dev_r')).to.deep.equal(['online']);
  });
});
