/**
 * The device lifecycle. The spec names active and the four values that refuse commands; which moves are
 * allowed between them is ours (docs/api.md, "Devices"): retired is final, revoked only ends in retired,
 * and the three reversible holds (quarantined, suspended) move freely with active.
 */
export const DEVICE_STATUSES = ['active', 'quarantined', 'suspended', 'revoked', 'retired'] as const;
export type DeviceStatus = (typeof DEVICE_STATUSES)[number];

const MOVES: Readonly<Record<DeviceStatus, readonly DeviceStatus[]>> = {
  active: ['quarantined', 'suspended', 'revoked', 'retired'],
  quarantined: ['active', 'suspended', 'revoked', 'retired'],
  suspended: ['active', 'quarantined', 'revoked', 'retired'],
  revoked: ['retired'],
  retired: [],
};

export function isDeviceStatus(value: unknown): value is DeviceStatus {
  return typeof value === 'string' && (DEVICE_STATUSES as readonly string[]).includes(value);
}

export function canMove(from: DeviceStatus, to: DeviceStatus): boolean {
  return MOVES[from].includes(to);
}

export const DEVICE_KINDS = ['hub', 'device'] as const;
export type DeviceKind = (typeof DEVICE_KINDS)[number];

/** Catalogue profile: a draft profile cannot be armed; verification is one-way. */
export const DEVICE_PROFILES = ['draft', 'verified'] as const;
export type DeviceProfile = (typeof DEVICE_PROFILES)[number];
