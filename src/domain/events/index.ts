export { defineEvent, type DomainEvent, type EventDefinition, type Retention } from './definition.js';
export { allEvents, eventDefinition, eventTypes } from './all.js';
