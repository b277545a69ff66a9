import type { Decider } from '../decider.js';
import { Conflict, NotFound } from '../errors.js';
import type { AgentEvent } from './events.js';

interface RegisterAgent {
  readonly type: 'RegisterAgent';
  readonly agentId: string;
  readonly projectId: string;
  readonly siteId: string;
  readonly hubId: string;
  readonly certificateSerial?: string;
}

interface RevokeAgent {
  readonly type: 'RevokeAgent';
  readonly agentId: string;
}

export type AgentCommand = RegisterAgent | RevokeAgent;

export type AgentState =
  | { readonly registered: false }
  | {
      readonly registered: true;
      readonly projectId: string;
      readonly hubId: string;
      readonly revoked: boolean;
    };

export const agentStreamName = (agentId: string) => `agent-${agentId}`;

/** An agent is registered once and revoked at most once; revoking again records nothing. */
export const agentDecider: Decider<AgentCommand, AgentEvent, AgentState> = {
  initialState: () => ({ registered: false }),

  decide(command, state) {
    if (command.type === 'RegisterAgent') {
      if (state.registered) throw new Conflict('agent_exists', { agentId: command.agentId });
      const serial =
        command.certificateSerial === undefined ? {} : { certificateSerial: command.certificateSerial };
      return [
        {
          type: 'AgentRegistered',
          data: {
            agentId: command.agentId,
            projectId: command.projectId,
            siteId: command.siteId,
            hubId: command.hubId,
            ...serial,
          },
        },
      ];
    }
    if (!state.registered) throw new NotFound('agent');
    if (state.revoked) return [];
    return [{ type: 'AgentRevoked', data: { agentId: command.agentId, projectId: state.projectId } }];
  },

  evolve(state, event) {
    switch (event.type) {
      case 'AgentRegistered':
        return { registered: true, projectId: event.data.projectId, hubId: event.data.hubId, revoked: false };
      case 'AgentRevoked':
        return state.registered ? { ...state, revoked: true } : state;
      default:
        return state;
    }
  },
};
