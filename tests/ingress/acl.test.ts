import { expect } from 'chai';
import { mayPublish, maySubscribe, type AgentGrant } from '../../src/ingress/broker/acl.js';

const agent: AgentGrant = { agentId: 'agent-a', deviceIds: new Set(['hub-a', 'dev-1']) };
const own = 'dc/v1/agents/agent-a';

describe('broker ACL', function () {
  describe('mayPublish', function () {
    for (const topic of [
      `${own}/devices/dev-1/readings`,
      `${own}/devices/dev-1/status`,
      `${own}/devices/hub-a/readings`,
      `${own}/status`,
      `${own}/pairing/candidates`,
      `${own}/commands/cmd-1/ack`,
    ]) {
      it(`allows ${topic}`, function () {
        const decision = mayPublish(agent, topic);
        expect(decision.allowed).to.equal(true);
      });
    }

    const refusals: Array<[string, string]> = [
      ['dc/v1/agents/agent-b/devices/dev-9/readings', 'foreign_subtree'],
      ['dc/v1/agents/agent-b/status', 'foreign_subtree'],
      // A prefix of another agent's id is not the agent's own subtree.
      ['dc/v1/agents/agent-a-evil/status', 'foreign_subtree'],
      ['$SYS/broker/clients', 'foreign_subtree'],
      ['dc/v2/agents/agent-a/status', 'foreign_subtree'],
      ['status', 'foreign_subtree'],
      [`${own}/devices/+/readings`, 'wildcard'],
      [`${own}/#`, 'wildcard'],
      [`${own}/devices/dev-2/readings`, 'foreign_device'],
      [`${own}/devices/dev-2/status`, 'foreign_device'],
      [`${own}/down/pairing`, 'not_uplink'],
      [`${own}/devices/dev-1/readings/extra`, 'not_uplink'],
      [`${own}/devices/dev-1`, 'not_uplink'],
      [`${own}/status/`, 'not_uplink'],
      [`${own}/devices/dev 1/readings`, 'not_uplink'],
    ];
    for (const [topic, reason] of refusals) {
      it(`refuses ${topic} (${reason})`, function () {
        expect(mayPublish(agent, topic)).to.deep.equal({ allowed: false, reason });
      });
    }

    it('returns the parsed topic with the decision', function () {
      expect(mayPublish(agent, `${own}/devices/dev-1/readings`)).to.deep.equal({
        allowed: true,
        topic: { kind: 'readings', agentId: 'agent-a', deviceId: 'dev-1' },
      });
    });
  });

  describe('maySubscribe', function () {
    for (const filter of [`${own}/down/#`, `${own}/down/pairing`, `${own}/down/+`, `${own}/down/commands`]) {
      it(`allows ${filter}`, function () {
        expect(maySubscribe(agent, filter)).to.equal(true);
      });
    }

    for (const filter of [
      '#',
      '+',
      '+/#',
      '+/v1/agents/agent-a/down/#',
      '$SYS/#',
      '$share/group/dc/v1/agents/agent-a/down/#',
      'dc/#',
      'dc/v1/agents/#',
      'dc/v1/agents/+/down/#',
      'dc/v1/agents/agent-b/down/#',
      'dc/v1/agents/agent-a-evil/down/#',
      `${own}/#`,
      `${own}/+/#`,
      `${own}/status`,
      `${own}/devices/dev-1/readings`,
      `${own}/down`,
      `${own}/down/#/x`,
      `${own}/down/pair+`,
    ]) {
      it(`refuses ${filter}`, function () {
        expect(maySubscribe(agent, filter)).to.equal(false);
      });
    }
  });
});
