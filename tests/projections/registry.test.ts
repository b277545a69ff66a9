import { expect } from 'chai';
import { deviceDecider, deviceStreamName } from '../../src/domain/devices/index.js';
import { handleCommand } from '../../src/eventstore/handle-command.js';
import { bindingsProjector } from '../../src/projections/bindings/projector.js';
import { listBindings } from '../../src/projections/bindings/queries.js';
import { catchUpProjector } from '../../src/projections/catch-up.js';
import { installProjector } from '../../src/projections/checkpoints.js';
import { devicesProjector } from '../../src/projections/devices/projector.js';
import { findDevice, listDevices } from '../../src/projections/devices/queries.js';
import { rebuildProjector } from '../../src/projections/rebuild.js';
import { sitesProjector } from '../../src/projections/sites/projector.js';
import { listSites } from '../../src/projections/sites/queries.js';
import { createBinding } from '../../src/registry/bindings.js';
import { registerDevice } from '../support/registry.js';
import { eventStoreForEachTest } from '../support/event-store.js';

const device = (
  projectId: string,
  n: number,
  overrides: { siteId?: string; productModel?: string } = {},
) => ({
  projectId,
  siteId: overrides.siteId ?? 'site_a',
  parentHubId: null,
  kind: 'device' as const,
  manufacturer: 'Acme',
  productModel: overrides.productModel ?? `M-${n}`,
  capabilities: ['environment.temperature'],
  profile: 'draft' as const,
  ieeeAddr: `0x${n.toString(16).padStart(16, '0')}`,
});

describe('registry projections', () => {
  const suite = eventStoreForEachTest({ idlePollMs: 50 });

  async function allSeqs(): Promise<{ device_id: string; seq: string }[]> {
    const { rows } = await suite.db.pool.query<{ device_id: string; seq: string }>(
      'SELECT device_id, seq FROM devices ORDER BY seq',
    );
    return rows;
  }

  it('numbers devices 1..n in registration order, without gaps, across batches', async () => {
    const ids: string[] = [];
    for (let n = 0; n < 25; n++) ids.push((await registerDevice(suite.store, device('prj_a', n))).deviceId);
    await catchUpProjector(suite.db.pool, suite.store, devicesProjector(), 7); // batches of 7: 4 batches
    const rows = await allSeqs();
    expect(rows.map((r) => r.device_id)).to.deep.equal(ids);
    expect(rows.map((r) => Number(r.seq))).to.deep.equal(ids.map((_, i) => i + 1));
  });

  it('applying a batch twice changes nothing, and a rebuild gives every device the same seq', async () => {
    for (let n = 0; n < 10; n++) await registerDevice(suite.store, device('prj_a', n));
    const { deviceId } = await registerDevice(suite.store, device('prj_a', 99));
    await handleCommand(suite.store, deviceStreamName(deviceId), deviceDecider, {
      type: 'ChangeDeviceLifecycle',
      deviceId,
      status: 'quarantined',
    });
    const projector = devicesProjector();
    await installProjector(suite.db.pool, projector);
    const { events } = await suite.store.readAll({ maxCount: 1000, eventTypes: projector.eventTypes });
    const client = await suite.db.pool.connect();
    try {
      await projector.apply(events, client);
      const once = await allSeqs();
      await projector.apply(events, client); // a redelivered batch
      expect(await allSeqs()).to.deep.equal(once);
    } finally {
      client.release();
    }
    expect((await findDevice(suite.db.pool, 'prj_a', deviceId))?.status).to.equal('quarantined');

    const before = await allSeqs();
    await rebuildProjector(suite.db.pool, suite.store, projector, { batchSize: 3 });
    expect(await allSeqs()).to.deep.equal(before);
    expect((await findDevice(suite.db.pool, 'prj_a', deviceId))?.status).to.equal('quarantined');
  });

  it('folds several lifecycle and profile changes of one device in one batch, in order', async () => {
    const { deviceId } = await registerDevice(suite.store, device('prj_a', 1));
    const stream = deviceStreamName(deviceId);
    for (const status of ['suspended', 'active', 'revoked'] as const) {
      await handleCommand(suite.store, stream, deviceDecider, {
        type: 'ChangeDeviceLifecycle',
        deviceId,
        status,
      });
    }
    await handleCommand(suite.store, stream, deviceDecider, { type: 'VerifyDeviceProfile', deviceId });
    await catchUpProjector(suite.db.pool, suite.store, devicesProjector());
    expect(await findDevice(suite.db.pool, 'prj_a', deviceId)).to.deep.include({
      status: 'revoked',
      profile: 'verified',
    });
  });

  it('pages one project by keyset with combined filters, and never shows another project', async () => {
    for (let n = 0; n < 6; n++) {
      await registerDevice(
        suite.store,
        device('prj_a', n, { siteId: n % 2 ? 'site_odd' : 'site_even', productModel: 'TS0601' }),
      );
    }
    await registerDevice(suite.store, device('prj_b', 100, { siteId: 'site_odd', productModel: 'TS0601' }));
    await catchUpProjector(suite.db.pool, suite.store, devicesProjector());
    const filter = { siteId: 'site_odd', productModel: 'TS0601', status: 'active' };
    const first = await listDevices(suite.db.pool, 'prj_a', filter, { after: 0n, limit: 2 });
    expect(first.devices).to.have.length(2);
    const second = await listDevices(suite.db.pool, 'prj_a', filter, { after: first.next!, limit: 2 });
    expect(second.devices).to.have.length(1);
    expect(second.next).to.equal(undefined);
    expect([...first.devices, ...second.devices].every((d) => d.siteId === 'site_odd')).to.equal(true);
    expect(
      (await listDevices(suite.db.pool, 'prj_a', { productModel: 'ts0601' }, { after: 0n, limit: 10 }))
        .devices,
    ).to.deep.equal([]);
  });

  it('never stores the radio address in the read model', async () => {
    await registerDevice(suite.store, device('prj_a', 0xabc));
    await catchUpProjector(suite.db.pool, suite.store, devicesProjector());
    const { rows } = await suite.db.pool.query('SELECT * FROM devices');
    expect(JSON.stringify(rows)).to.not.include('0000000000000abc');
  });

  it('projects sites and bindings once, even when their events are applied twice', async () => {
    const { deviceId } = await registerDevice(suite.store, device('prj_a', 1));
    await suite.store.append(
      'site-site_1',
      [
        {
          id: crypto.randomUUID(),
          type: 'SiteCreated',
          data: { siteId: 'site_1', projectId: 'prj_a', name: 'A', timezone: 'UTC' },
        },
      ],
      'no_stream',
    );
    await createBinding(suite.store, {
      projectId: 'prj_a',
      request: {
        deviceId,
        resourceType: 'room',
        resourceId: 'r1',
        channelMapping: { 'environment.temperature': 't' },
      },
      idempotencyKey: undefined,
      at: new Date('2025-01-01T00:00:00Z'),
    });
    for (const projector of [sitesProjector(), bindingsProjector()]) {
      await installProjector(suite.db.pool, projector);
      const { events } = await suite.store.readAll({ maxCount: 100, eventTypes: projector.eventTypes });
      const client = await suite.db.pool.connect();
      try {
        await projector.apply(events, client);
        await projector.apply(events, client);
      } finally {
        client.release();
      }
    }
    expect(await listSites(suite.db.pool, 'prj_a')).to.have.length(1);
    expect(await listSites(suite.db.pool, 'prj_b')).to.deep.equal([]);
    const bindings = await listBindings(suite.db.pool, 'prj_a');
    expect(bindings).to.have.length(1);
    expect(bindings[0]).to.deep.include({ deviceId, channelMapping: { 'environment.temperature': 't' } });
  });
});
