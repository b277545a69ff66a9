import { expect } from 'chai';
import { Conflict, InvalidInput, NotFound } from '../../src/domain/errors.js';
import {
  DEVICE_STATUSES,
  canMove,
  deviceDecider,
  type DeviceEvent,
  type RegisterDevice,
} from '../../src/domain/devices/index.js';
import { given } from '../support/decider-spec.js';

/** The device the tests register: the command names it and the event records it with the same fields. */
const DEVICE = {
  deviceId: 'dev_1',
  projectId: 'prj_1',
  siteId: 'site_1',
  parentHubId: 'dev_hub',
  kind: 'device',
  manufacturer: 'IKEA of Sweden',
  productModel: 'TS0601',
  capabilities: ['environment.temperature', 'system.battery_percent'],
  profile: 'draft',
  ieeeAddr: '0x00158d0001a2b3c4',
} satisfies Omit<RegisterDevice, 'type'>;

const register = (overrides: Partial<RegisterDevice> = {}): RegisterDevice => ({
  type: 'RegisterDevice',
  ...DEVICE,
  ...overrides,
});

const registered: DeviceEvent = { type: 'DeviceRegistered', data: DEVICE };

const moved = (status: (typeof DEVICE_STATUSES)[number]): DeviceEvent => ({
  type: 'DeviceLifecycleChanged',
  data: { deviceId: 'dev_1', status },
});

describe('device decider', () => {
  describe('registration', () => {
    it('registers a device with catalogue capabilities, reported strings kept as they are', () => {
      given(deviceDecider, []).when(register()).then([registered]);
    });

    it('starts active, with the profile it was registered with', () => {
      expect(given(deviceDecider, [registered]).state).to.deep.equal({
        registered: true,
        projectId: 'prj_1',
        kind: 'device',
        status: 'active',
        profile: 'draft',
      });
    });

    it('refuses a capability that is not in the catalogue', () => {
      given(deviceDecider, [])
        .when(register({ capabilities: ['environment.temperature', 'Environment.Temperature'] }))
        .thenFails(InvalidInput, (e) => expect(e.reason).to.equal('unknown_capability'));
    });

    it('refuses a capability listed twice', () => {
      given(deviceDecider, [])
        .when(register({ capabilities: ['water.leak', 'water.leak'] }))
        .thenFails(InvalidInput, (e) => expect(e.reason).to.equal('duplicate_capability'));
    });

    it('refuses a hub with a parent, and a device that is its own parent', () => {
      given(deviceDecider, [])
        .when(register({ kind: 'hub' }))
        .thenFails(InvalidInput);
      given(deviceDecider, [])
        .when(register({ parentHubId: 'dev_1' }))
        .thenFails(InvalidInput);
    });

    it('refuses to register the same public id twice', () => {
      given(deviceDecider, [registered]).when(register()).thenFails(Conflict);
    });
  });

  describe('lifecycle', () => {
    const change = (status: (typeof DEVICE_STATUSES)[number], reason?: string) => ({
      type: 'ChangeDeviceLifecycle' as const,
      deviceId: 'dev_1',
      status,
      ...(reason === undefined ? {} : { reason }),
    });

    it('quarantines an active device, with the reason', () => {
      given(deviceDecider, [registered])
        .when(change('quarantined', 'tamper alarm'))
        .then([
          {
            type: 'DeviceLifecycleChanged',
            data: { deviceId: 'dev_1', status: 'quarantined', reason: 'tamper alarm' },
          },
        ]);
    });

    it('records nothing when the device already has that status', () => {
      given(deviceDecider, [registered]).when(change('active')).then([]);
    });

    it('never leaves retired, and leaves revoked only for retired', () => {
      given(deviceDecider, [registered, moved('retired')])
        .when(change('active'))
        .thenFails(Conflict);
      given(deviceDecider, [registered, moved('revoked')])
        .when(change('active'))
        .thenFails(Conflict);
      given(deviceDecider, [registered, moved('revoked')])
        .when(change('retired'))
        .then([moved('retired')]);
    });

    it('moves freely between active and the reversible holds', () => {
      for (const from of ['active', 'quarantined', 'suspended'] as const) {
        for (const to of ['active', 'quarantined', 'suspended'] as const) {
          if (from !== to) expect(canMove(from, to), `${from} -> ${to}`).to.equal(true);
        }
      }
    });

    it('refuses to change a device that was never registered', () => {
      given(deviceDecider, []).when(change('suspended')).thenFails(NotFound);
    });
  });

  describe('profile', () => {
    const verify = { type: 'VerifyDeviceProfile' as const, deviceId: 'dev_1' };

    it('verifies a draft profile once', () => {
      const verified: DeviceEvent = { type: 'DeviceProfileVerified', data: { deviceId: 'dev_1' } };
      given(deviceDecider, [registered]).when(verify).then([verified]);
      given(deviceDecider, [registered, verified]).when(verify).then([]);
    });
  });

  it('skips events of later features on the same stream', () => {
    const foreign = {
      type: 'CapabilityGrantGiven',
      data: { capability: 'actuator.relay' },
    } as unknown as DeviceEvent;
    expect(given(deviceDecider, [registered, foreign, moved('suspended')]).state).to.include({
      status: 'suspended',
    });
  });
});
