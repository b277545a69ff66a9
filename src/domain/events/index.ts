export { allEvents, eventDefinition, eventTypes } from './all.js';
