import { expect } from 'chai';
import {
  REFUSAL_REASONS,
  controlDecider,
  type ControlEvent,
  type RequestCommand,
  type SetGrant,
} from '../../src/domain/control/index.js';
import { Conflict, InvalidInput, MissingScope, NotFound, Refusal } from '../../src/domain/errors.js';
import { client, history, operator } from '../support/control-history.js';
import { given } from '../support/decider-spec.js';

const AT = '2026-01-01T00:00:30.000Z';

const request = (overrides: Partial<RequestCommand> = {}): RequestCommand => ({
  type: 'RequestCommand',
  projectId: 'prj_1',
  deviceId: 'dev_1',
  clientId: 'cli_1',
  scopes: new Set(['commands:write', 'commands:high_risk']),
  by: client,
  at: AT,
  capability: 'actuator.relay',
  value: true,
  mode: 'imperative',
  ttlSeconds: 60,
  confirm: true,
  idempotencyKey: 'k1',
  requestHash: 'h1',
  newCommandId: 'cmd_new',
  newChallengeId: 'chl_new',
  expiresAt: '2026-01-01T00:01:30.000Z',
  challengeExpiresAt: '2026-01-01T00:01:30.000Z',
  ...overrides,
});

const grant = (capability: string, write = true, overrides: Partial<SetGrant> = {}): SetGrant => ({
  type: 'SetGrant',
  projectId: 'prj_1',
  by: client,
  at: AT,
  capability,
  write,
  ...overrides,
});

/** A verified device with write granted on relay, valve, switch and contactor. */
const armed: ControlEvent[] = [
  history.registered(),
  history.verified(),
  history.granted('binary.switch'),
  history.granted('actuator.relay'),
  history.granted('actuator.valve'),
  history.granted('actuator.contactor'),
];

const accepted = (overrides: Partial<Extract<ControlEvent, { type: 'CommandAccepted' }>['data']> = {}) =>
  history.accepted('cmd_new', {
    acceptedAt: AT,
    expiresAt: '2026-01-01T00:01:30.000Z',
    idempotencyKey: 'k1',
    requestHash: 'h1',
    ...overrides,
  });

function withoutKey(event: ControlEvent): ControlEvent {
  if (event.type !== 'CommandAccepted') return event;
  const { idempotencyKey: _key, ...data } = event.data;
  return { type: 'CommandAccepted', data };
}

const refusedWith = (reasons: string[]) => (e: Refusal) => expect(e.reasons).to.deep.equal(reasons);

describe('control decider', () => {
  describe('grants', () => {
    it('enables an S1 grant on a draft profile', () => {
      given(controlDecider, [history.registered(), history.denied('binary.switch')])
        .when(grant('binary.switch'))
        .then([history.granted('binary.switch', AT)]);
    });

    it('refuses to enable S2 or S3 on a draft profile with a conflict, recording nothing', () => {
      for (const key of ['actuator.relay', 'actuator.contactor']) {
        given(controlDecider, [history.registered(), history.denied(key)])
          .when(grant(key))
          .thenFails(Conflict, (e) => expect(e.reason).to.equal('profile_not_verified'));
      }
    });

    it('enables S2 once the profile is verified; enabling again records nothing', () => {
      given(controlDecider, [history.registered(), history.verified()])
        .when(grant('actuator.relay'))
        .then([history.granted('actuator.relay', AT)]);
      given(controlDecider, armed).when(grant('actuator.relay')).then([]);
    });

    it('refuses unknown, read-only and absent capabilities (422) and foreign devices (404)', () => {
      const reg = [history.registered(['actuator.relay'], 'verified')];
      const reasonOf = (reason: string) => (e: InvalidInput) => expect(e.reason).to.equal(reason);
      given(controlDecider, reg)
        .when(grant('actuator.nope'))
        .thenFails(InvalidInput, reasonOf('unknown_capability'));
      given(controlDecider, reg)
        .when(grant('water.leak'))
        .thenFails(InvalidInput, reasonOf('capability_not_writable'));
      given(controlDecider, reg)
        .when(grant('actuator.valve'))
        .thenFails(InvalidInput, reasonOf('capability_not_on_device'));
      given(controlDecider, reg)
        .when(grant('actuator.relay', true, { projectId: 'prj_2' }))
        .thenFails(NotFound);
      given(controlDecider, []).when(grant('actuator.relay')).thenFails(NotFound);
    });

    it('refuses to enable a grant on a revoked or retired device', () => {
      given(controlDecider, [history.registered(), history.verified(), history.lifecycle('retired')])
        .when(grant('actuator.relay'))
        .thenFails(Conflict, (e) => expect(e.reason).to.equal('device_lifecycle'));
    });

    it('a revoke cancels the pending commands of that pair, in the same decision', () => {
      given(controlDecider, [
        ...armed,
        history.accepted('cmd_1'),
        history.accepted('cmd_2', { capability: 'actuator.valve' }),
        history.accepted('cmd_3'),
        history.sent('cmd_3', 1),
      ])
        .when(grant('actuator.relay', false))
        .then([
          history.revoked('actuator.relay', AT),
          ...['cmd_1', 'cmd_3'].map((id): ControlEvent => ({
            type: 'CommandCancelled',
            data: { ...history.ref(id), at: AT, reason: 'grant_revoked', by: client },
          })),
        ]);
    });

    it('revoking what is not granted records nothing', () => {
      given(controlDecider, [history.registered(), history.denied('actuator.relay')])
        .when(grant('actuator.relay', false))
        .then([]);
    });
  });

  describe('profile and lifecycle', () => {
    const by = operator('bench tested');
    it('verifies a draft profile, naming the operator and the reason', () => {
      given(controlDecider, [history.registered()])
        .when({
          type: 'SetProfile',
          profile: 'verified',
          reason: 'bench tested',
          by,
          at: '2026-01-01T00:00:01.000Z',
        })
        .then([history.verified()]);
    });

    it('a downgrade revokes the S2/S3 grants and cancels their pending commands; S1 stays', () => {
      const at = '2026-01-01T00:00:03.000Z';
      const down = operator('firmware changed');
      given(controlDecider, [
        ...armed,
        history.accepted('cmd_1'),
        history.accepted('cmd_2', { capability: 'binary.switch' }),
      ])
        .when({ type: 'SetProfile', profile: 'draft', reason: 'firmware changed', by: down, at })
        .then([
          history.downgraded(),
          ...['actuator.relay', 'actuator.valve', 'actuator.contactor'].map((capability): ControlEvent => ({
            type: 'CapabilityWriteRevoked',
            data: { deviceId: 'dev_1', projectId: 'prj_1', capability, by: down, at },
          })),
          {
            type: 'CommandCancelled',
            data: { ...history.ref('cmd_1'), at, reason: 'profile_downgraded', by: down },
          },
        ]);
    });

    it('moving away from active cancels every pending command', () => {
      const by = operator('tamper alarm');
      given(controlDecider, [
        ...armed,
        history.accepted('cmd_1'),
        history.accepted('cmd_2', { capability: 'binary.switch' }),
      ])
        .when({
          type: 'SetLifecycle',
          status: 'quarantined',
          reason: 'tamper alarm',
          by,
          at: '2026-01-01T00:00:02.000Z',
        })
        .then([
          history.lifecycle('quarantined', 'tamper alarm'),
          ...['cmd_1', 'cmd_2'].map((id): ControlEvent => ({
            type: 'CommandCancelled',
            data: { ...history.ref(id), at: '2026-01-01T00:00:02.000Z', reason: 'device_lifecycle', by },
          })),
        ]);
    });

    it('refuses a forbidden move (retired is final) and records nothing for the current status', () => {
      const by = operator();
      given(controlDecider, [history.registered(), history.lifecycle('retired')])
        .when({ type: 'SetLifecycle', status: 'active', by, at: AT })
        .thenFails(Conflict, (e) => expect(e.details).to.deep.equal({ from: 'retired', to: 'active' }));
      given(controlDecider, [history.registered()])
        .when({ type: 'SetLifecycle', status: 'active', by, at: AT })
        .then([]);
    });
  });

  describe('command acceptance: the safety gate', () => {
    it('accepts an S2 command with a grant and confirm, with its expiry from ttlSeconds', () => {
      given(controlDecider, armed).when(request()).then([accepted()]);
    });

    it('an S1 command needs a grant too, but no confirm and no verified profile', () => {
      given(controlDecider, [history.registered(), history.granted('binary.switch')])
        .when(request({ capability: 'binary.switch', confirm: undefined }))
        .then([accepted({ capability: 'binary.switch' })]);
      given(controlDecider, [history.registered(), history.denied('binary.switch')])
        .when(request({ capability: 'binary.switch' }))
        .thenFails(Refusal, refusedWith(['grant_missing']));
    });

    it('refuses an unknown or read-only capability', () => {
      given(controlDecider, armed)
        .when(request({ capability: 'actuator.nope' }))
        .thenFails(Refusal, refusedWith(['capability_unknown']));
      given(controlDecider, armed)
        .when(request({ capability: 'water.leak' }))
        .thenFails(Refusal, refusedWith(['capability_not_writable']));
    });

    it('a missing and a foreign device refuse alike, with nothing about the device', () => {
      const foreign = [history.registered(), history.lifecycle('quarantined')];
      const answers: string[][] = [];
      for (const past of [[], foreign]) {
        given(controlDecider, past)
          .when(request({ projectId: 'prj_2', confirm: false }))
          .thenFails(Refusal, (e) => answers.push([...e.reasons]));
      }
      expect(answers).to.deep.equal([
        ['device_not_addressable', 'confirm_required'],
        ['device_not_addressable', 'confirm_required'],
      ]);
    });

    it('lists every failing condition, not only the first', () => {
      given(controlDecider, [history.registered(), history.lifecycle('suspended')])
        .when(request({ capability: 'actuator.contactor', confirm: false }))
        .thenFails(
          Refusal,
          refusedWith([
            'device_lifecycle',
            'profile_not_verified',
            'grant_missing',
            'confirm_required',
            'challenge_required',
          ]),
        );
    });

    it('refuses after a revoke and in every refusing lifecycle status', () => {
      given(controlDecider, [...armed, history.revoked('actuator.relay')])
        .when(request())
        .thenFails(Refusal, refusedWith(['grant_missing']));
      for (const status of ['quarantined', 'suspended', 'revoked', 'retired'] as const) {
        given(controlDecider, [...armed, history.lifecycle(status)])
          .when(request())
          .thenFails(Refusal, refusedWith(['device_lifecycle']));
      }
    });

    it('S2 without confirm is refused', () => {
      given(controlDecider, armed)
        .when(request({ confirm: undefined }))
        .thenFails(Refusal, refusedWith(['confirm_required']));
    });

    it('a value failure answers 422 (invalid_value) when no policy reason stands, never coerced', () => {
      for (const value of [1, '1', 'on', 'true', null]) {
        given(controlDecider, armed)
          .when(request({ value }))
          .thenFails(InvalidInput, (e) => {
            expect(e.errorCode).to.equal('invalid_value');
            expect(e.reason).to.equal('wrong_type');
          });
      }
    });

    it('policy reasons win over a value failure (403 before 422)', () => {
      given(controlDecider, [...armed, history.revoked('actuator.relay')])
        .when(request({ value: 'on' }))
        .thenFails(Refusal, refusedWith(['grant_missing']));
    });

    it('refuses a mode other than desired or imperative, and ttlSeconds outside 1..86400 or not an integer', () => {
      given(controlDecider, armed)
        .when(request({ mode: 'once' }))
        .thenFails(InvalidInput);
      for (const ttlSeconds of [0, 86_401, 1.5, '60', undefined]) {
        given(controlDecider, armed)
          .when(request({ ttlSeconds }))
          .thenFails(InvalidInput, (e) => expect(e.field).to.equal('ttlSeconds'));
      }
      given(controlDecider, armed)
        .when(request({ ttlSeconds: 86_400, expiresAt: '2026-01-02T00:00:30.000Z' }))
        .then([accepted({ ttlSeconds: 86_400, expiresAt: '2026-01-02T00:00:30.000Z' })]);
    });

    it('the closed reasons list holds the spec examples and the pinned reasons', () => {
      expect(REFUSAL_REASONS).to.include.members([
        'capability_unknown',
        'capability_not_writable',
        'device_not_addressable',
        'device_lifecycle',
        'grant_missing',
        'confirm_required',
        'challenge_required',
        'challenge_invalid',
      ]);
    });
  });

  describe('idempotency on the device', () => {
    const past = [...armed, accepted()];
    it('an identical repeat records nothing (the caller answers the first acceptance)', () => {
      given(controlDecider, past)
        .when(request({ newCommandId: 'cmd_other' }))
        .then([]);
    });

    it('the same key with another request is a conflict, even if the gate would now refuse', () => {
      given(controlDecider, [...past, history.revoked('actuator.relay')])
        .when(request({ requestHash: 'h2', value: false }))
        .thenFails(Conflict, (e) => expect(e.reason).to.equal('idempotency_key_reused'));
    });

    it('a repeat after a revoke still answers the first acceptance', () => {
      given(controlDecider, [...past, history.revoked('actuator.relay')])
        .when(request())
        .then([]);
    });

    it('without a key every request is a new command', () => {
      given(controlDecider, past)
        .when(request({ idempotencyKey: undefined, newCommandId: 'cmd_2' }))
        .then([
          withoutKey(
            history.accepted('cmd_2', {
              acceptedAt: AT,
              expiresAt: '2026-01-01T00:01:30.000Z',
              requestHash: 'h1',
            }),
          ),
        ]);
    });
  });

  describe('desired commands', () => {
    it('a new desired command supersedes the pending desired ones of the same capability', () => {
      given(controlDecider, [
        ...armed,
        history.accepted('cmd_1', { mode: 'desired' }),
        history.accepted('cmd_2', { mode: 'imperative' }),
        history.accepted('cmd_3', { mode: 'desired', capability: 'actuator.valve' }),
        history.accepted('cmd_4', { mode: 'desired', expiresAt: '2026-01-01T00:00:20.000Z' }),
      ])
        .when(request({ mode: 'desired' }))
        .then([
          accepted({ mode: 'desired' }),
          {
            type: 'CommandSuperseded',
            data: { ...history.ref('cmd_1'), at: AT, supersededBy: 'cmd_new' },
          },
        ]);
    });
  });

  describe('S3 two-step challenge', () => {
    const s3 = (overrides: Partial<RequestCommand> = {}) =>
      request({ capability: 'actuator.contactor', idempotencyKey: 'k-s3', ...overrides });
    const issued = history.challenge('chl_1'); // issued 00:00:05 for cli_1, true, expires 00:01:05

    it('the first otherwise valid request records a challenge of 60 s bound to client, capability and value', () => {
      given(controlDecider, armed)
        .when(s3())
        .then([
          {
            type: 'CommandChallengeIssued',
            data: {
              challengeId: 'chl_new',
              deviceId: 'dev_1',
              projectId: 'prj_1',
              clientId: 'cli_1',
              capability: 'actuator.contactor',
              value: true,
              mode: 'imperative',
              ttlSeconds: 60,
              issuedAt: AT,
              expiresAt: '2026-01-01T00:01:30.000Z',
            },
          },
        ]);
    });

    it('no challenge is issued while anything else fails: the reasons list challenge_required with them', () => {
      given(controlDecider, [history.registered(), history.verified()])
        .when(s3())
        .thenFails(Refusal, refusedWith(['grant_missing', 'challenge_required']));
      given(controlDecider, armed)
        .when(s3({ value: 'on' }))
        .thenFails(InvalidInput);
    });

    it('answered correctly: accepted, consuming the challenge', () => {
      given(controlDecider, [...armed, issued])
        .when(s3({ challengeId: 'chl_1' }))
        .then([
          accepted({
            capability: 'actuator.contactor',
            idempotencyKey: 'k-s3',
            challengeId: 'chl_1',
          }),
        ]);
    });

    it('reused, expired, foreign, mismatched or unknown: each with its own reason', () => {
      const consumed = [
        ...armed,
        issued,
        history.accepted('cmd_1', { capability: 'actuator.contactor', challengeId: 'chl_1' }),
      ];
      given(controlDecider, consumed)
        .when(s3({ challengeId: 'chl_1' }))
        .thenFails(Refusal, refusedWith(['challenge_reused']));
      given(controlDecider, [...armed, issued])
        .when(s3({ challengeId: 'chl_1', at: '2026-01-01T00:01:05.000Z' }))
        .thenFails(Refusal, refusedWith(['challenge_expired']));
      given(controlDecider, [...armed, issued])
        .when(s3({ challengeId: 'chl_1', clientId: 'cli_2', by: { kind: 'client', clientId: 'cli_2' } }))
        .thenFails(Refusal, refusedWith(['challenge_foreign']));
      given(controlDecider, [...armed, issued])
        .when(s3({ challengeId: 'chl_1', value: false }))
        .thenFails(Refusal, refusedWith(['challenge_mismatch']));
      given(controlDecider, [...armed, issued])
        .when(s3({ challengeId: 'chl_zz' }))
        .thenFails(Refusal, refusedWith(['challenge_invalid']));
    });

    describe('the answer must be the very command the challenge was issued for', () => {
      const answer = (overrides: Partial<RequestCommand> = {}) => s3({ challengeId: 'chl_1', ...overrides });

      it('the exact same command is accepted', () => {
        given(controlDecider, [...armed, issued])
          .when(answer())
          .then([
            accepted({ capability: 'actuator.contactor', idempotencyKey: 'k-s3', challengeId: 'chl_1' }),
          ]);
      });

      it('another mode, TTL or value: challenge_mismatch', () => {
        for (const other of [
          { mode: 'desired' },
          { ttlSeconds: 30, expiresAt: '2026-01-01T00:01:00.000Z' },
          { value: false },
        ]) {
          given(controlDecider, [...armed, issued])
            .when(answer(other))
            .thenFails(Refusal, refusedWith(['challenge_mismatch']));
        }
      });

      it('another client, even of the same project: challenge_foreign', () => {
        given(controlDecider, [...armed, issued])
          .when(answer({ clientId: 'cli_2', by: { kind: 'client', clientId: 'cli_2' } }))
          .thenFails(Refusal, refusedWith(['challenge_foreign']));
      });

      /** Given a challenge, then these facts on the device, when it is answered exactly: voided. */
      const voidedAfter = (...changes: ControlEvent[]) =>
        given(controlDecider, [...armed, issued, ...changes])
          .when(answer())
          .thenFails(Refusal, refusedWith(['challenge_voided']));

      it('a revoke and a re-grant after the challenge void it', () => {
        voidedAfter(
          history.revoked('actuator.contactor'),
          history.granted('actuator.contactor', '2026-01-01T00:00:07.000Z'),
        );
      });

      it('a grant change of another capability of the device voids it too', () => {
        voidedAfter(history.revoked('actuator.relay'));
      });

      it('a profile downgrade, then draft → verified and a re-grant after the challenge void it', () => {
        voidedAfter(
          history.downgraded(),
          history.revoked('actuator.contactor'),
          history.verified(),
          history.granted('actuator.contactor', '2026-01-01T00:00:07.000Z'),
        );
      });

      it('quarantine and back to active after the challenge void it', () => {
        voidedAfter(history.lifecycle('quarantined'), history.lifecycle('active'));
      });

      it('a challenge recorded without mode and TTL (an older event) can no longer be answered', () => {
        given(controlDecider, [...armed, history.challengeWithoutModeAndTtl('chl_1')])
          .when(answer())
          .thenFails(Refusal, refusedWith(['challenge_mismatch']));
      });
    });

    describe('the commands:high_risk scope, checked before the gate', () => {
      const lowRisk = new Set(['commands:write'] as const);
      const answeredWithout = (e: MissingScope) => expect(e.scope).to.equal('commands:high_risk');

      it('an S3 command without it fails on the scope, not with reasons, at every step', () => {
        given(controlDecider, armed)
          .when(s3({ scopes: lowRisk }))
          .thenFails(MissingScope, answeredWithout);
        given(controlDecider, [...armed, issued])
          .when(s3({ scopes: lowRisk, challengeId: 'chl_1' }))
          .thenFails(MissingScope, answeredWithout);
      });

      it('fails on the scope for a missing device and for one that would refuse everything', () => {
        given(controlDecider, [])
          .when(s3({ scopes: lowRisk }))
          .thenFails(MissingScope, answeredWithout);
        given(controlDecider, [history.registered(), history.lifecycle('suspended')])
          .when(s3({ scopes: lowRisk, confirm: false }))
          .thenFails(MissingScope, answeredWithout);
      });

      it('fails on the scope before the idempotency key: no replay of an earlier acceptance', () => {
        const past = [
          ...armed,
          issued,
          accepted({ capability: 'actuator.contactor', idempotencyKey: 'k-s3' }),
        ];
        given(controlDecider, past)
          .when(s3({ challengeId: 'chl_1' }))
          .then([]);
        given(controlDecider, past)
          .when(s3({ scopes: lowRisk, challengeId: 'chl_1' }))
          .thenFails(MissingScope, answeredWithout);
      });

      it('S1 and S2 commands do not need it', () => {
        given(controlDecider, armed)
          .when(request({ scopes: lowRisk }))
          .then([accepted()]);
        given(controlDecider, armed)
          .when(request({ capability: 'binary.switch', scopes: lowRisk }))
          .then([accepted({ capability: 'binary.switch' })]);
      });
    });

    it('a challengeId on an S1 or S2 command is a 422 on that field, not ignored', () => {
      for (const capability of ['binary.switch', 'actuator.relay']) {
        given(controlDecider, armed)
          .when(request({ capability, challengeId: 'chl_1' }))
          .thenFails(InvalidInput, (e) => {
            expect(e.errorCode).to.equal('invalid_request');
            expect(e.field).to.equal('challengeId');
            expect(e.reason).to.equal('challenge_not_applicable');
          });
      }
    });
  });
});
