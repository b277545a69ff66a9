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

const chained = new Set(CHAINED_EVENT_TYPES);

export function isChained(eventType: string): boolean {
  return chained.has(eventType);
}

/**
 * The chain an event belongs to: its project's. Most chained types carry `projectId` in their data. A
 * device's lifecycle and profile moves carry only `deviceId`: they belong to the project the device was
 * registered in, which its `DeviceRegistered` (earlier in the same stream, so earlier in the global order)
 * names. `deviceProject` answers that from what the caller learned (learnDevice) of the events before.
 * Undefined: the event names no project and no registered device, so it belongs to no chain.
 */
export function chainOf(
  data: unknown,
  deviceProject: (deviceId: string) => string | undefined = () => undefined,
): string | undefined {
  const fields = data as { projectId?: unknown; deviceId?: unknown } | null;
  if (typeof fields?.projectId === 'string') return fields.projectId;
  return typeof fields?.deviceId === 'string' ? deviceProject(fields.deviceId) : undefined;
}

/** The device and project an event registers, for chainOf's `deviceProject` of the events after it. */
export function learnDevice(
  type: string,
  data: unknown,
): { readonly deviceId: string; readonly projectId: string } | undefined {
  if (type !== 'DeviceRegistered') return undefined;
  const { deviceId, projectId } = data as { deviceId?: unknown; projectId?: unknown };
  return typeof deviceId === 'string' && typeof projectId === 'string' ? { deviceId, projectId } : undefined;
}
