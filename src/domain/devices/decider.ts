import { isCapabilityKey } from '../catalogue/index.js';
import type { Decider } from '../decider.js';
import { Conflict, InvalidInput, NotFound } from '../errors.js';
import type { DeviceEvent } from './events.js';
import {
  canMove,
  isDeviceStatus,
  type DeviceKind,
  type DeviceProfile,
  type DeviceStatus,
} from './lifecycle.js';

const REPORTED_TEXT_MAX_LENGTH = 128;

export interface RegisterDevice {
  readonly type: 'RegisterDevice';
  readonly deviceId: string;
  readonly projectId: string;
  readonly siteId: string;
  readonly parentHubId: string | null;
  readonly kind: DeviceKind;
  readonly manufacturer: string;
  readonly productModel: string;
  readonly capabilities: readonly string[];
  readonly profile: DeviceProfile;
  readonly ieeeAddr?: string;
}

interface ChangeDeviceLifecycle {
  readonly type: 'ChangeDeviceLifecycle';
  readonly deviceId: string;
  readonly status: DeviceStatus;
  readonly reason?: string;
}

interface VerifyDeviceProfile {
  readonly type: 'VerifyDeviceProfile';
  readonly deviceId: string;
}

export type DeviceCommand = RegisterDevice | ChangeDeviceLifecycle | VerifyDeviceProfile;

/** Only what decisions on this stream need; the read model holds the rest. */
export type DeviceState =
  | { readonly registered: false }
  | {
      readonly registered: true;
      readonly projectId: string;
      readonly kind: DeviceKind;
      readonly status: DeviceStatus;
      readonly profile: DeviceProfile;
    };

export const deviceStreamName = (publicId: string) => `device-${publicId}`;

export const deviceDecider: Decider<DeviceCommand, DeviceEvent, DeviceState> = {
  initialState: () => ({ registered: false }),

  decide(command, state) {
    if (command.type === 'RegisterDevice') return register(command, state);
    if (!state.registered) throw new NotFound('device');
    if (command.type === 'ChangeDeviceLifecycle') {
      if (!isDeviceStatus(command.status)) throw new InvalidInput('unknown_status', 'status');
      if (command.status === state.status) return [];
      if (!canMove(state.status, command.status)) {
        throw new Conflict('lifecycle_move_not_allowed', { from: state.status, to: command.status });
      }
      const reason = command.reason === undefined ? {} : { reason: command.reason };
      return [
        {
          type: 'DeviceLifecycleChanged',
          data: { deviceId: command.deviceId, status: command.status, ...reason },
        },
      ];
    }
    if (state.profile === 'verified') return [];
    return [{ type: 'DeviceProfileVerified', data: { deviceId: command.deviceId } }];
  },

  evolve(state, event) {
    switch (event.type) {
      case 'DeviceRegistered':
        return {
          registered: true,
          projectId: event.data.projectId,
          kind: event.data.kind,
          status: 'active',
          profile: event.data.profile,
        };
      case 'DeviceLifecycleChanged':
        return state.registered ? { ...state, status: event.data.status } : state;
      case 'DeviceProfileVerified':
        return state.registered ? { ...state, profile: 'verified' } : state;
      default:
        return state; // a later feature's event on this stream
    }
  },
};

/**
 * What a device reports about itself must fit before it is recorded: manufacturer and model of 1 to
 * REPORTED_TEXT_MAX_LENGTH characters, capabilities from the catalogue, each once. Pairing checks a joining
 * device with it too, so a candidate can always be adopted.
 */
export function checkReportedProfile(reported: {
  readonly manufacturer: string;
  readonly productModel: string;
  readonly capabilities: readonly string[];
}): void {
  for (const field of ['manufacturer', 'productModel'] as const) {
    if (reported[field].length === 0) throw new InvalidInput('empty', field);
    if (reported[field].length > REPORTED_TEXT_MAX_LENGTH) throw new InvalidInput('too_long', field);
  }
  const unknown = reported.capabilities.find((key) => !isCapabilityKey(key));
  if (unknown !== undefined) throw new InvalidInput('unknown_capability', `capabilities.${unknown}`);
  if (new Set(reported.capabilities).size !== reported.capabilities.length) {
    throw new InvalidInput('duplicate_capability', 'capabilities');
  }
}

function register(command: RegisterDevice, state: DeviceState): DeviceEvent[] {
  if (state.registered) throw new Conflict('device_exists', { deviceId: command.deviceId });
  if (command.kind === 'hub' && command.parentHubId !== null) {
    throw new InvalidInput('hub_has_no_parent', 'parentHubId');
  }
  if (command.parentHubId === command.deviceId) throw new InvalidInput('own_parent', 'parentHubId');
  checkReportedProfile(command);
  const ieee = command.ieeeAddr === undefined ? {} : { ieeeAddr: command.ieeeAddr };
  return [
    {
      type: 'DeviceRegistered',
      data: {
        deviceId: command.deviceId,
        projectId: command.projectId,
        siteId: command.siteId,
        parentHubId: command.parentHubId,
        kind: command.kind,
        manufacturer: command.manufacturer,
        productModel: command.productModel,
        capabilities: [...command.capabilities],
        profile: command.profile,
        ...ieee,
      },
    },
  ];
}
