export * from './scopes.js';
export * from './events.js';
export * from './project.js';
export * from './client.js';
