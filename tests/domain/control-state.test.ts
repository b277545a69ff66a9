import { expect } from 'chai';
import { CommandChallengeIssued } from '../../src/domain/control/command-events.js';
import {
  hasGrant,
  loadControlState,
  pendingCommands,
  type ControlEvent,
} from '../../src/domain/control/index.js';
import { client, history } from '../support/control-history.js';

describe('device control state (fold of the device stream)', () => {
  it('knows no device and no commands before registration', () => {
    const state = loadControlState([]);
    expect(state.registration).to.equal(undefined);
    expect(state.commands.size).to.equal(0);
  });

  it('registration: the device, active, its profile, the adoption denials', () => {
    const state = loadControlState([history.registered(), history.denied('actuator.relay')]);
    expect(state.registration).to.include({ deviceId: 'dev_1', projectId: 'prj_1', kind: 'device' });
    expect(state.status).to.equal('active');
    expect(state.profile).to.equal('draft');
    expect(state.grants.get('actuator.relay')).to.deep.equal({
      capability: 'actuator.relay',
      state: 'denied',
    });
    expect(hasGrant(state, 'actuator.relay')).to.equal(false);
  });

  it('lifecycle and profile moves keep who made them, when and why', () => {
    const state = loadControlState([
      history.registered(),
      history.verified(),
      history.lifecycle('quarantined', 'tamper alarm'),
    ]);
    expect(state.profile).to.equal('verified');
    expect(state.profileChange).to.deep.equal({
      by: { kind: 'operator', reason: 'bench tested' },
      at: '2026-01-01T00:00:01.000Z',
      reason: 'bench tested',
    });
    expect(state.status).to.equal('quarantined');
    expect(state.statusChange).to.include({ reason: 'tamper alarm', at: '2026-01-01T00:00:02.000Z' });
    const downgraded = loadControlState([history.registered(), history.verified(), history.downgraded()]);
    expect(downgraded.profile).to.equal('draft');
    expect(downgraded.profileChange.reason).to.equal('firmware changed');
  });

  it('grants: denied, granted, revoked, each with who and when', () => {
    const events: ControlEvent[] = [
      history.registered(),
      history.denied('actuator.relay'),
      history.granted('actuator.relay', '2026-01-01T00:01:00.000Z'),
    ];
    expect(hasGrant(loadControlState(events), 'actuator.relay')).to.equal(true);
    const state = loadControlState([
      ...events,
      history.revoked('actuator.relay', '2026-01-01T00:02:00.000Z'),
    ]);
    expect(state.grants.get('actuator.relay')).to.deep.equal({
      capability: 'actuator.relay',
      state: 'revoked',
      by: client,
      at: '2026-01-01T00:02:00.000Z',
    });
    expect(hasGrant(state, 'actuator.relay')).to.equal(false);
  });

  it('a command: queued, then sent with its attempt, then one outcome that stands', () => {
    const base = [history.registered(), history.accepted('cmd_1', { mode: 'desired' })];
    const queued = loadControlState(base).commands.get('cmd_1')!;
    expect(queued).to.include({
      status: 'queued',
      capability: 'actuator.relay',
      value: true,
      mode: 'desired',
      ttlSeconds: 60,
      expiresAt: '2026-01-01T00:01:10.000Z',
      idempotencyKey: 'key-cmd_1',
      requestHash: 'hash-cmd_1',
    });
    expect(loadControlState(base).idempotencyKeys.get('key-cmd_1')).to.equal('cmd_1');

    const sent = loadControlState([...base, history.sent('cmd_1', 1), history.sent('cmd_1', 2)]);
    expect(sent.commands.get('cmd_1')!.status).to.equal('sent');
    expect(sent.commands.get('cmd_1')!.lastAttempt).to.deep.equal({
      attempt: 2,
      agentId: 'agt_1',
      sentAt: '2026-01-01T00:00:12.000Z',
    });

    const done = loadControlState([
      ...base,
      history.sent('cmd_1', 1),
      { type: 'CommandSucceeded', data: { ...history.ref('cmd_1'), at: '2026-01-01T00:00:20.000Z' } },
      { type: 'CommandExpired', data: { ...history.ref('cmd_1'), at: '2026-01-01T00:02:00.000Z' } },
      {
        type: 'CommandAckIgnored',
        data: {
          ...history.ref('cmd_1'),
          at: '2026-01-01T00:02:01.000Z',
          ackStatus: 'failed',
          outcome: 'succeeded',
        },
      },
    ]);
    const record = done.commands.get('cmd_1')!;
    expect(record.status).to.equal('succeeded');
    expect(record.outcome).to.deep.equal({ at: '2026-01-01T00:00:20.000Z' });
    expect(record.ignoredAcks).to.equal(1);
    expect(pendingCommands(done)).to.deep.equal([]);
  });

  it('every outcome: failed, expired, superseded, cancelled (with its reason and actor)', () => {
    const at = '2026-01-01T00:00:30.000Z';
    const outcomes: [ControlEvent, string][] = [
      [{ type: 'CommandFailed', data: { ...history.ref('cmd_1'), at, reason: 'device_busy' } }, 'failed'],
      [{ type: 'CommandExpired', data: { ...history.ref('cmd_1'), at } }, 'expired'],
      [
        { type: 'CommandSuperseded', data: { ...history.ref('cmd_1'), at, supersededBy: 'cmd_2' } },
        'superseded',
      ],
      [
        {
          type: 'CommandCancelled',
          data: { ...history.ref('cmd_1'), at, reason: 'grant_revoked', by: client },
        },
        'cancelled',
      ],
    ];
    for (const [event, status] of outcomes) {
      const state = loadControlState([history.registered(), history.accepted('cmd_1'), event]);
      expect(state.commands.get('cmd_1')!.status, event.type).to.equal(status);
    }
    const cancelled = loadControlState([history.registered(), history.accepted('cmd_1'), outcomes[3]![0]]);
    expect(cancelled.commands.get('cmd_1')!.outcome).to.deep.equal({
      at,
      cancelReason: 'grant_revoked',
      by: client,
    });
    const superseded = loadControlState([history.registered(), history.accepted('cmd_1'), outcomes[2]![0]]);
    expect(superseded.commands.get('cmd_1')!.outcome!.supersededBy).to.equal('cmd_2');
  });

  it('pending commands are the queued and sent ones, in acceptance order, per capability on request', () => {
    const state = loadControlState([
      history.registered(),
      history.accepted('cmd_1'),
      history.accepted('cmd_2', { capability: 'actuator.valve' }),
      history.sent('cmd_2', 1),
      history.accepted('cmd_3'),
      { type: 'CommandExpired', data: { ...history.ref('cmd_3'), at: '2026-01-01T00:05:00.000Z' } },
    ]);
    expect(pendingCommands(state).map((c) => c.commandId)).to.deep.equal(['cmd_1', 'cmd_2']);
    expect(pendingCommands(state, 'actuator.valve').map((c) => c.commandId)).to.deep.equal(['cmd_2']);
  });

  it('S3 challenges: open once issued, consumed by the command that answered them', () => {
    const issued = history.challenge('chl_1');
    const open = loadControlState([history.registered(), issued]);
    expect(open.challenges.get('chl_1')).to.deep.equal({
      challengeId: 'chl_1',
      clientId: 'cli_1',
      capability: 'actuator.contactor',
      value: true,
      mode: 'imperative',
      ttlSeconds: 60,
      issuedAt: '2026-01-01T00:00:05.000Z',
      expiresAt: '2026-01-01T00:01:05.000Z',
      controlChangesAtIssue: 1,
    });
    const consumed = loadControlState([
      history.registered(),
      issued,
      history.accepted('cmd_9', { capability: 'actuator.contactor', challengeId: 'chl_1' }),
    ]);
    expect(consumed.challenges.get('chl_1')!.consumedBy).to.equal('cmd_9');
    expect(consumed.commands.get('cmd_9')!.challengeId).to.equal('chl_1');
  });

  it('grant, profile and lifecycle facts after a challenge leave it behind the device', () => {
    const issued = history.challenge('chl_1');
    const before = loadControlState([history.registered(), history.verified(), issued]);
    expect(before.challenges.get('chl_1')!.controlChangesAtIssue).to.equal(before.controlChanges);
    for (const change of [
      history.granted('actuator.relay'),
      history.revoked('actuator.relay'),
      history.denied('actuator.relay'),
      history.downgraded(),
      history.lifecycle('quarantined'),
    ]) {
      const after = loadControlState([history.registered(), history.verified(), issued, change]);
      expect(after.controlChanges, change.type).to.equal(before.controlChanges + 1);
      expect(after.challenges.get('chl_1')!.controlChangesAtIssue).to.equal(before.controlChanges);
    }
  });

  it('a challenge stored before mode and TTL were recorded still parses and folds, without them', () => {
    const parsed = CommandChallengeIssued.schema.parse(history.challengeWithoutModeAndTtl('chl_1').data);
    const state = loadControlState([history.registered(), { type: 'CommandChallengeIssued', data: parsed }]);
    expect(state.challenges.get('chl_1')).to.not.have.any.keys('mode', 'ttlSeconds');
    expect(state.challenges.get('chl_1')).to.include({ capability: 'actuator.contactor', value: true });
  });

  it('facts about an unknown command change nothing', () => {
    const before = loadControlState([history.registered()]);
    const after = loadControlState([history.registered(), history.sent('cmd_x', 1)]);
    expect(after).to.deep.equal(before);
  });
});
