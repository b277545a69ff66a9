import type { Pool } from '../infra/postgres/pool.js';
import { findAgent } from '../projections/agents/queries.js';
import type { AgentDirectory, AgentRecord } from './broker/agent-directory.js';

/**
 * The broker's agent directory, read from the `agents` read model at every connect and refresh. It lags
 * the event store by the projector's delay: a revoke is refused at connect once projected, and the edge
 * dispatcher closes live connections as soon as the read model shows it (see downlink.ts).
 */
export function readModelAgentDirectory(pool: Pool): AgentDirectory {
  return {
    async getAgent(agentId): Promise<AgentRecord | undefined> {
      const agent = await findAgent(pool, agentId);
      if (!agent) return undefined;
      return {
        agentId: agent.agentId,
        projectId: agent.projectId,
        hubId: agent.hubId,
        revoked: agent.revoked,
        deviceIds: new Set(agent.deviceIds),
      };
    },
  };
}
