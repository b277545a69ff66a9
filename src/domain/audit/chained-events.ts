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

/** The chain an event belongs to: its project's. Every chained type carries `projectId` in its data. */
export function chainOf(data: unknown): string | undefined {
  const projectId = (data as { projectId?: unknown } | null)?.projectId;
  return typeof projectId === 'string' ? projectId : undefined;
}
