export { DeviceRegistered, type DeviceEvent } from './events.js';
export {
  checkReportedProfile,
  deviceDecider,
  deviceStreamName,
  type DeviceState,
  type RegisterDevice,
} from './decider.js';
export {
  DEVICE_KINDS,
  DEVICE_PROFILES,
  DEVICE_STATUSES,
  canMove,
  isDeviceStatus,
  type DeviceProfile,
  type DeviceStatus,
} from './lifecycle.js';
