import type { EventDefinition } from './definition.js';

/**
 * Every event type of the system, one list per feature. A feature that records facts adds its list here,
 * so projectors and the audit log can ask which types exist without a hand-kept copy.
 */
export const allEvents: readonly EventDefinition[] = [];

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
