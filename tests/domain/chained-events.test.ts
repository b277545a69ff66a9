import { expect } from 'chai';
import { CHAINED_EVENT_TYPES, ChainMembership } from '../../src/domain/audit/chained-events.js';

describe('audit chain membership', () => {
  it('puts a device move that names no project in the chain of the project the device was registered in', () => {
    const membership = new ChainMembership([['dev_old', 'prj_1']]);
    expect(
      membership.projectOf('DeviceLifecycleChanged', { deviceId: 'dev_old', status: 'retired' }),
    ).to.equal('prj_1');
    expect(
      membership.projectOf('DeviceProfileVerified', { deviceId: 'dev_new' }),
      'not registered yet',
    ).to.equal(undefined);
    expect(membership.projectOf('DeviceRegistered', { deviceId: 'dev_new', projectId: 'prj_2' })).to.equal(
      'prj_2',
    );
    expect(membership.projectOf('DeviceProfileDowngraded', { deviceId: 'dev_new' })).to.equal('prj_2');
    expect(
      membership.projectOf('CommandSent', { deviceId: 'dev_new', projectId: 'prj_3' }),
      'named wins',
    ).to.equal('prj_3');
    expect([...membership.registered]).to.deep.equal([['dev_new', 'prj_2']]);
  });

  it('chains the profile and lifecycle moves, which carry no projectId', () => {
    expect(CHAINED_EVENT_TYPES).to.include.members([
      'DeviceLifecycleChanged',
      'DeviceProfileVerified',
      'DeviceProfileDowngraded',
    ]);
  });
});
