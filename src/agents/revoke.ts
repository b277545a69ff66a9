import { agentDecider, agentStreamName } from '../domain/agents/index.js';
import { handleCommand } from '../eventstore/handle-command.js';
import type { EventStore } from '../eventstore/port.js';

/**
 * Records the revocation of an agent. Running brokers learn it from the event store and close the agent's
 * connections; the directory refuses it at every later connect. Revoking twice records nothing.
 */
export async function revokeAgent(
  store: EventStore,
  agentId: string,
  metadata: Record<string, unknown> = {},
): Promise<{ alreadyRevoked: boolean }> {
  const result = await handleCommand(
    store,
    agentStreamName(agentId),
    agentDecider,
    { type: 'RevokeAgent', agentId },
    { metadata },
  );
  return { alreadyRevoked: result.appended === undefined };
}
