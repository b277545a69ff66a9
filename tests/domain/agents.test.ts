import { Conflict, NotFound } from '../../src/domain/errors.js';
import { agentDecider, type AgentEvent } from '../../src/domain/agents/index.js';
import { given } from '../support/decider-spec.js';

const registered: AgentEvent = {
  type: 'AgentRegistered',
  data: { agentId: 'agt_1', projectId: 'prj_1', siteId: 'site_1', hubId: 'dev_hub', certificateSerial: '0a' },
};
const revoked: AgentEvent = { type: 'AgentRevoked', data: { agentId: 'agt_1', projectId: 'prj_1' } };

describe('agent decider', () => {
  it('registers an agent once', () => {
    const command = {
      type: 'RegisterAgent',
      agentId: 'agt_1',
      projectId: 'prj_1',
      siteId: 'site_1',
      hubId: 'dev_hub',
      certificateSerial: '0a',
    } as const;
    given(agentDecider, []).when(command).then([registered]);
    given(agentDecider, [registered]).when(command).thenFails(Conflict);
  });

  it('revokes a registered agent once; revoking again records nothing; an unknown agent is not found', () => {
    given(agentDecider, [registered]).when({ type: 'RevokeAgent', agentId: 'agt_1' }).then([revoked]);
    given(agentDecider, [registered, revoked]).when({ type: 'RevokeAgent', agentId: 'agt_1' }).then([]);
    given(agentDecider, []).when({ type: 'RevokeAgent', agentId: 'agt_1' }).thenFails(NotFound);
  });
});
