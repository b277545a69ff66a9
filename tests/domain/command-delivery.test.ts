import { expect } from 'chai';
import {
  decideAck,
  decideExpiry,
  decideRedelivery,
  decideSend,
} from '../../src/domain/control/delivery-decisions.js';
import {
  CommandAckIgnored,
  CommandFailed,
  CommandSucceeded,
} from '../../src/domain/control/command-events.js';
import { loadControlState, type ControlEvent } from '../../src/domain/control/index.js';
import { client, history } from '../support/control-history.js';

// history.accepted: expires at 00:01:10.
const BEFORE_EXPIRY = new Date('2026-01-01T00:00:30.000Z');
const AT_EXPIRY = new Date('2026-01-01T00:01:10.000Z');
const delivery = (now = BEFORE_EXPIRY) => ({ agentId: 'agt_1', now });
const ref = history.ref;

function state(...events: ControlEvent[]) {
  return loadControlState([history.registered(), ...events]);
}

const ended = (type: 'CommandSucceeded' | 'CommandExpired', commandId: string, at: string): ControlEvent =>
  ({ type, data: { ...ref(commandId), at } }) as ControlEvent;

describe('command delivery and outcome (pure decisions over the device control state)', () => {
  describe('send', () => {
    it('given a queued command, when it is accepted, then it is sent once as attempt 1', () => {
      const decision = decideSend(state(history.accepted('cmd_1')), 'cmd_1', 'accepted', delivery());
      expect(decision.events).to.deep.equal([
        {
          type: 'CommandSent',
          data: { ...ref('cmd_1'), agentId: 'agt_1', attempt: 1, sentAt: BEFORE_EXPIRY.toISOString() },
        },
      ]);
      expect(decision.toApply).to.deep.equal([
        {
          commandId: 'cmd_1',
          deviceId: 'dev_1',
          capability: 'actuator.relay',
          value: true,
          mode: 'imperative',
          attempt: 1,
          expiresAt: '2026-01-01T00:01:10.000Z',
        },
      ]);
    });

    it('given a command whose TTL has ended, when it would be sent, then it is expired and never sent', () => {
      const decision = decideSend(state(history.accepted('cmd_1')), 'cmd_1', 'accepted', delivery(AT_EXPIRY));
      expect(decision.events).to.deep.equal([
        { type: 'CommandExpired', data: { ...ref('cmd_1'), at: AT_EXPIRY.toISOString() } },
      ]);
      expect(decision.toApply).to.deep.equal([]);
    });

    it('given an imperative command already sent, then it is never sent again, not even after a reconnect', () => {
      const s = state(history.accepted('cmd_1'), history.sent('cmd_1', 1));
      expect(decideSend(s, 'cmd_1', 'accepted', delivery()).events).to.deep.equal([]);
      expect(decideSend(s, 'cmd_1', 'reconnected', delivery()).events).to.deep.equal([]);
      expect(decideRedelivery(s, delivery()).events).to.deep.equal([]);
    });

    it('given an imperative command queued while its agent was away, when the agent comes back, then it is sent once', () => {
      const s = state(history.accepted('cmd_1'));
      const decision = decideRedelivery(s, delivery());
      expect(decision.toApply.map((c) => [c.commandId, c.attempt])).to.deep.equal([['cmd_1', 1]]);
    });

    it('given a desired command already sent, when the agent comes back, then it is sent again as attempt + 1', () => {
      const s = state(history.accepted('cmd_1', { mode: 'desired' }), history.sent('cmd_1', 1));
      expect(
        decideSend(s, 'cmd_1', 'accepted', delivery()).events,
        'not on a repeated acceptance',
      ).to.deep.equal([]);
      const decision = decideRedelivery(s, delivery());
      expect(decision.events).to.deep.equal([
        {
          type: 'CommandSent',
          data: { ...ref('cmd_1'), agentId: 'agt_1', attempt: 2, sentAt: BEFORE_EXPIRY.toISOString() },
        },
      ]);
      expect(decision.toApply[0]).to.include({ mode: 'desired', attempt: 2 });
    });

    it('on a reconnect, pending commands are sent in acceptance order, expired ones expired, ended ones left', () => {
      const s = state(
        history.accepted('cmd_old', { mode: 'desired', expiresAt: '2026-01-01T00:00:20.000Z' }),
        history.accepted('cmd_done', { capability: 'binary.switch' }),
        ended('CommandSucceeded', 'cmd_done', '2026-01-01T00:00:12.000Z'),
        history.accepted('cmd_a', { mode: 'desired', capability: 'actuator.valve' }),
        history.accepted('cmd_b', { capability: 'binary.switch' }),
      );
      const decision = decideRedelivery(s, delivery());
      expect(decision.events.map((e) => [e.type, (e.data as { commandId: string }).commandId])).to.deep.equal(
        [
          ['CommandExpired', 'cmd_old'],
          ['CommandSent', 'cmd_a'],
          ['CommandSent', 'cmd_b'],
        ],
      );
      expect(decision.toApply.map((c) => c.commandId)).to.deep.equal(['cmd_a', 'cmd_b']);
    });

    it('an unknown command, or a device never registered, decides nothing', () => {
      expect(decideSend(state(), 'cmd_x', 'accepted', delivery()).events).to.deep.equal([]);
      expect(decideSend(loadControlState([]), 'cmd_x', 'accepted', delivery()).events).to.deep.equal([]);
    });
  });

  describe('ack', () => {
    const sent = () => state(history.accepted('cmd_1'), history.sent('cmd_1', 1));
    const now = new Date('2026-01-01T00:00:40.000Z');
    /** An ack from the agent the command was sent to (history.sent: agt_1). */
    const ack = (fields: {
      commandId?: string;
      status: 'applied' | 'failed';
      detail?: string;
      now?: Date;
    }) => ({
      agentId: 'agt_1',
      commandId: 'cmd_1',
      now,
      ...fields,
    });
    const by = { agentId: 'agt_1' };

    it('given a command sent to the agent, when it acks applied, then the command succeeded, by that agent', () => {
      expect(decideAck(sent(), ack({ status: 'applied' }))).to.deep.equal({
        accepted: true,
        events: [{ type: 'CommandSucceeded', data: { ...ref('cmd_1'), at: now.toISOString(), ...by } }],
      });
    });

    it('given a command sent to the agent, when it acks failed, then it failed with the agent as the reason and its detail', () => {
      expect(decideAck(sent(), ack({ status: 'failed', detail: 'jammed' }))).to.deep.equal({
        accepted: true,
        events: [
          {
            type: 'CommandFailed',
            data: {
              ...ref('cmd_1'),
              at: now.toISOString(),
              ...by,
              reason: 'agent_reported',
              detail: 'jammed',
            },
          },
        ],
      });
    });

    it('given a queued command never sent, when an agent acks it, then nothing is recorded and the ack is dropped', () => {
      const queued = state(history.accepted('cmd_1'));
      expect(decideAck(queued, ack({ status: 'applied' }))).to.deep.equal({
        accepted: false,
        dropped: 'not_sent_to_agent',
      });
    });

    it('given a command sent to one agent, when another agent acks it, then nothing is recorded and the ack is dropped', () => {
      expect(decideAck(sent(), { ...ack({ status: 'applied' }), agentId: 'agt_2' })).to.deep.equal({
        accepted: false,
        dropped: 'not_sent_to_agent',
      });
    });

    it('after expiry by the server clock, before the expiry was recorded: expired, and the ack is ignored', () => {
      expect(decideAck(sent(), ack({ status: 'applied', now: AT_EXPIRY }))).to.deep.equal({
        accepted: true,
        events: [
          { type: 'CommandExpired', data: { ...ref('cmd_1'), at: AT_EXPIRY.toISOString() } },
          {
            type: 'CommandAckIgnored',
            data: {
              ...ref('cmd_1'),
              at: AT_EXPIRY.toISOString(),
              ...by,
              ackStatus: 'applied',
              outcome: 'expired',
            },
          },
        ],
      });
    });

    it('a late ack for an expired command is recorded as ignored once and changes nothing; later ones are dropped', () => {
      const history3 = [
        history.accepted('cmd_1'),
        history.sent('cmd_1', 1),
        ended('CommandExpired', 'cmd_1', AT_EXPIRY.toISOString()),
      ];
      const late = new Date('2026-01-01T00:02:00.000Z');
      const decision = decideAck(state(...history3), ack({ status: 'applied', detail: 'ok', now: late }));
      expect(decision).to.deep.equal({
        accepted: true,
        events: [
          {
            type: 'CommandAckIgnored',
            data: {
              ...ref('cmd_1'),
              at: late.toISOString(),
              ...by,
              ackStatus: 'applied',
              outcome: 'expired',
              detail: 'ok',
            },
          },
        ],
      });
      const events = decision.accepted ? decision.events : [];
      const folded = state(...history3, ...events);
      expect(folded.commands.get('cmd_1')).to.include({ status: 'expired', ignoredAcks: 1 });
      expect(decideAck(folded, ack({ status: 'failed', detail: 'other', now: late }))).to.deep.equal({
        accepted: false,
        dropped: 'ack_ignored_before',
      });
    });

    it('the redelivery of the ack that set the outcome records nothing; a contradicting one is ignored', () => {
      const s = state(
        history.accepted('cmd_1'),
        history.sent('cmd_1', 1),
        ended('CommandSucceeded', 'cmd_1', '2026-01-01T00:00:20.000Z'),
      );
      expect(decideAck(s, ack({ status: 'applied' }))).to.deep.equal({ accepted: true, events: [] });
      const contradicting = decideAck(s, ack({ status: 'failed' }));
      expect(contradicting.accepted && contradicting.events.map((e) => e.type)).to.deep.equal([
        'CommandAckIgnored',
      ]);
    });

    it('an ack for a cancelled command is ignored, naming the outcome', () => {
      const cancelled: ControlEvent = {
        type: 'CommandCancelled',
        data: { ...ref('cmd_1'), at: '2026-01-01T00:00:20.000Z', reason: 'grant_revoked', by: client },
      };
      const s = state(history.accepted('cmd_1'), history.sent('cmd_1', 1), cancelled);
      const decision = decideAck(s, ack({ status: 'applied' }));
      expect(decision.accepted && decision.events[0]!.data).to.include({ outcome: 'cancelled' });
    });

    it('an ack for a command the device does not have is dropped', () => {
      expect(decideAck(sent(), ack({ commandId: 'cmd_x', status: 'applied' }))).to.deep.equal({
        accepted: false,
        dropped: 'unknown_command',
      });
    });

    it('outcome and ignored-ack events stored before they named their agent still parse', () => {
      const stored = { ...ref('cmd_1'), at: '2026-01-01T00:00:20.000Z' };
      expect(CommandSucceeded.schema.parse(stored)).to.deep.equal(stored);
      const failed = { ...stored, reason: 'agent_reported', detail: 'jammed' };
      expect(CommandFailed.schema.parse(failed)).to.deep.equal(failed);
      const ignored = { ...stored, ackStatus: 'applied', outcome: 'expired' };
      expect(CommandAckIgnored.schema.parse(ignored)).to.deep.equal(ignored);
    });
  });

  describe('expiry', () => {
    it('expires every pending command whose TTL has ended, and nothing else', () => {
      const s = state(
        history.accepted('cmd_1'),
        history.sent('cmd_1', 1),
        history.accepted('cmd_2', { expiresAt: '2026-01-01T00:05:00.000Z' }),
        history.accepted('cmd_3', { expiresAt: '2026-01-01T00:00:50.000Z' }),
        ended('CommandSucceeded', 'cmd_3', '2026-01-01T00:00:20.000Z'),
      );
      expect(decideExpiry(s, BEFORE_EXPIRY)).to.deep.equal([]);
      expect(decideExpiry(s, AT_EXPIRY)).to.deep.equal([
        { type: 'CommandExpired', data: { ...ref('cmd_1'), at: AT_EXPIRY.toISOString() } },
      ]);
    });
  });
});
