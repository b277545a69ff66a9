export { type AgentEvent } from './events.js';
export { agentDecider, agentStreamName } from './decider.js';
