export {
  DeviceLifecycleChanged,
  DeviceProfileDowngraded,
  DeviceProfileVerified,
  DeviceRegistered,
  deviceEvents,
  type DeviceEvent,
} from './events.js';
export {
  REPORTED_TEXT_MAX_LENGTH,
  checkReportedProfile,
  deviceDecider,
  deviceStreamName,
  type ChangeDeviceLifecycle,
  type DeviceCommand,
  type DeviceState,
  type RegisterDevice,
  type VerifyDeviceProfile,
} from './decider.js';
export {
  COMMAND_REFUSING_STATUSES,
  DEVICE_KINDS,
  DEVICE_PROFILES,
  DEVICE_STATUSES,
  canMove,
  isDeviceStatus,
  type DeviceKind,
  type DeviceProfile,
  type DeviceStatus,
} from './lifecycle.js';
