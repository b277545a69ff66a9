import { connectivityEvents } from '../connectivity/events.js';
import { auditEvents } from './checkpoint-events.js';
import { eventTypes } from '../events/all.js';

/**
 * The history that the audit chain makes verifiable: every fact that is kept for ever and says who could
 * switch what, or what was switched (identity, sites, devices, bindings, agents, pairing, grants, profile
 * and lifecycle moves, commands with every step of their delivery, S3 challenges, idempotency claims).
 *
 * Left out, and why (docs/audit.md, "What is chained"): readings, which are measurements, not decisions,
 * have a retention that deletes them, and outnumber everything else by orders of magnitude; and a device's
 * or hub's connectivity, which the service derives from connections (not a decision of anyone) and which
 * changes with every reconnect of an agent. The checkpoints are not chained either: they sign the chain.
 */
const NOT_CHAINED = new Set<string>([...connectivityEvents, ...auditEvents].map((d) => d.type));

export const CHAINED_EVENT_TYPES: readonly string[] = eventTypes(
  (d) => d.retention === 'forever' && !NOT_CHAINED.has(d.type),
);

/**
 * Which project's chain each event belongs to, for a reader going through the chained events in global
 * order. Most chained types carry `projectId` in their data. A device's lifecycle and profile moves carry
 * only `deviceId`: they belong to the project the device was registered in, which its `DeviceRegistered`
 * (earlier in the same stream, so earlier in the global order) names; the membership learns that from the
 * registrations it is shown, and starts from `known` (device id, project id) for those registered before
 * the first event it is shown. An event that names no project and no known device belongs to no chain.
 */
const REGISTRATION = 'DeviceRegistered';

export class ChainMembership {
  private readonly devices: Map<string, string>;
  /** The devices registered among the events shown so far, with their projects. */
  readonly registered = new Map<string, string>();

  constructor(known: Iterable<readonly [deviceId: string, projectId: string]> = []) {
    this.devices = new Map(known);
  }

  /**
   * Whether events of this type teach the membership where later events belong (a device's registration):
   * a reader that learns an event's project elsewhere must still show it these.
   */
  static learnsFrom(type: string): boolean {
    return type === REGISTRATION;
  }

  /** The project whose chain the event belongs to, or undefined for none. */
  projectOf(type: string, data: unknown): string | undefined {
    const fields = data as { projectId?: unknown; deviceId?: unknown } | null;
    const deviceId = typeof fields?.deviceId === 'string' ? fields.deviceId : undefined;
    if (typeof fields?.projectId === 'string') {
      if (type === REGISTRATION && deviceId !== undefined && !this.devices.has(deviceId)) {
        this.devices.set(deviceId, fields.projectId);
        this.registered.set(deviceId, fields.projectId);
      }
      return fields.projectId;
    }
    return deviceId === undefined ? undefined : this.devices.get(deviceId);
  }
}

/** The device an event names without naming its project: its project comes from the device's registration. */
export function deviceWithoutProject(data: unknown): string | undefined {
  const fields = data as { projectId?: unknown; deviceId?: unknown } | null;
  return typeof fields?.projectId !== 'string' && typeof fields?.deviceId === 'string'
    ? fields.deviceId
    : undefined;
}
