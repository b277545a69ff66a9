import { z } from 'zod';
import { defineEvent, type DomainEvent } from '../events/definition.js';

/** Facts of an edge agent's stream (`agent-<agentId>`). */
const AgentRegistered = defineEvent(
  'AgentRegistered',
  z.object({
    agentId: z.string(),
    projectId: z.string(),
    siteId: z.string(),
    /** Public id of the hub (coordinator) the agent fronts; registered in the same append. */
    hubId: z.string(),
    /** Hex serial of the certificate issued with the registration; absent when none was issued. */
    certificateSerial: z.string().optional(),
  }),
);

/** Covers every certificate ever issued for the agent id: the broker refuses the agent itself. */
const AgentRevoked = defineEvent('AgentRevoked', z.object({ agentId: z.string(), projectId: z.string() }));

export const agentEvents = [AgentRegistered, AgentRevoked] as const;

export type AgentEvent = DomainEvent<typeof AgentRegistered> | DomainEvent<typeof AgentRevoked>;
