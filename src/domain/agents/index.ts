export { AgentRegistered, AgentRevoked, agentEvents, type AgentEvent } from './events.js';
export {
  agentDecider,
  agentStreamName,
  type AgentCommand,
  type AgentState,
  type RegisterAgent,
  type RevokeAgent,
} from './decider.js';
