import { agentEvents } from '../agents/events.js';
import { auditEvents } from '../audit/checkpoint-events.js';
import { bindingEvents } from '../bindings/events.js';
import { commandEvents } from '../control/command-events.js';
import { connectivityEvents } from '../connectivity/events.js';
import { controlEvents } from '../control/idempotency-key-events.js';
import { deviceEvents } from '../devices/events.js';
import { grantEvents } from '../control/grant-events.js';
import { identityEvents } from '../identity/events.js';
import { pairingEvents } from '../pairing/events.js';
import { readingsEvents } from '../readings/events.js';
import { siteEvents } from '../sites/events.js';
import type { EventDefinition } from './definition.js';

/**
 * Every event type of the system, one list per feature. A feature that records facts adds its list here,
 * so projectors and the audit log can ask which types exist without a hand-kept copy.
 */
export const allEvents: readonly EventDefinition[] = [
  ...identityEvents,
  ...siteEvents,
  ...deviceEvents,
  ...bindingEvents,
  ...connectivityEvents,
  ...agentEvents,
  ...pairingEvents,
  ...grantEvents,
  ...commandEvents,
  ...controlEvents,
  ...readingsEvents,
  ...auditEvents,
];

const byType = new Map(allEvents.map((d) => [d.type, d]));

export function eventDefinition(type: string): EventDefinition | undefined {
  return byType.get(type);
}

export function eventTypes(filter: (d: EventDefinition) => boolean = () => true): string[] {
  return allEvents
    .filter(filter)
    .map((d) => d.type)
    .sort();
}
