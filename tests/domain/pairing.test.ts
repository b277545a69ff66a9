import { expect } from 'chai';
import { Conflict, InvalidInput, NotFound } from '../../src/domain/errors.js';
import {
  decideAdoption,
  pairingDecider,
  pairingUpdateOf,
  windowDurationSeconds,
  type JoinCandidate,
  type PairingEvent,
} from '../../src/domain/pairing/index.js';
import { given } from '../support/decider-spec.js';

const T0 = '2026-03-01T10:00:00.000Z';
const T1 = '2026-03-01T10:01:00.000Z';
const DEADLINE = '2026-03-01T10:02:00.000Z';
const AFTER = '2026-03-01T10:03:00.000Z';
const IEEE = '0x00124b0018e2a1b2';
const common = { sessionId: 'ps_1', hubId: 'dev_hub', projectId: 'prj_1' };

const opened: PairingEvent = {
  type: 'PairingWindowOpened',
  data: { ...common, ieeeAddr: null, state: 'open', deviceId: null, openedAt: T0, closesAt: DEADLINE },
};

const join = (overrides: Partial<JoinCandidate> = {}): JoinCandidate => ({
  type: 'JoinCandidate',
  sessionId: 'ps_1',
  ieeeAddr: IEEE,
  manufacturer: 'IKEA of Sweden',
  productModel: 'INSPELNING Smart plug',
  capabilities: ['binary.switch', 'electrical.power_active', 'actuator.relay'],
  at: T1,
  ...overrides,
});

const joined = (state: 'pending' | 'rejected' = 'pending', sessionId = 'ps_1', at = T1): PairingEvent => ({
  type: 'CandidateJoined',
  data: {
    ...common,
    sessionId,
    ieeeAddr: IEEE,
    state,
    deviceId: null,
    manufacturer: 'IKEA of Sweden',
    productModel: 'INSPELNING Smart plug',
    capabilities: ['binary.switch', 'electrical.power_active', 'actuator.relay'],
    joinedAt: at,
  },
});

const rejected: PairingEvent = {
  type: 'CandidateRejected',
  data: { ...common, ieeeAddr: IEEE, state: 'rejected', deviceId: null, rejectedAt: T1 },
};

const closedBy = (reason: 'deadline' | 'closed_by_client', closedAt: string): PairingEvent => ({
  type: 'PairingWindowClosed',
  data: { ...common, ieeeAddr: null, state: 'closed', deviceId: null, reason, closedAt },
});

const openSecond = (sessionId: string, at: string, closesAt: string): PairingEvent => ({
  type: 'PairingWindowOpened',
  data: { ...common, sessionId, ieeeAddr: null, state: 'open', deviceId: null, openedAt: at, closesAt },
});

describe('pairing decider', () => {
  it('opens one window per hub: a second open while it is open is a conflict naming it', () => {
    given(pairingDecider, [])
      .when({ type: 'OpenWindow', ...common, at: T0, closesAt: DEADLINE })
      .then([opened]);
    given(pairingDecider, [opened])
      .when({ type: 'OpenWindow', ...common, sessionId: 'ps_2', at: T1, closesAt: AFTER })
      .thenFails(Conflict, (e) => {
        expect(e.reason).to.equal('pairing_window_open');
        expect(e.details).to.deep.equal({ sessionId: 'ps_1' });
      });
  });

  it('opening after a deadline nobody recorded closes the old window as of its deadline first', () => {
    given(pairingDecider, [opened])
      .when({
        type: 'OpenWindow',
        ...common,
        sessionId: 'ps_2',
        at: AFTER,
        closesAt: '2026-03-01T10:05:00.000Z',
      })
      .then([closedBy('deadline', DEADLINE), openSecond('ps_2', AFTER, '2026-03-01T10:05:00.000Z')]);
  });

  it('closes at the deadline only once it has passed, and a closed window stays closed', () => {
    given(pairingDecider, [opened])
      .when({ type: 'CloseWindow', sessionId: 'ps_1', reason: 'deadline', at: T1 })
      .then([]);
    given(pairingDecider, [opened])
      .when({ type: 'CloseWindow', sessionId: 'ps_1', reason: 'deadline', at: AFTER })
      .then([closedBy('deadline', DEADLINE)]);
    given(pairingDecider, [opened, closedBy('closed_by_client', T1)])
      .when({ type: 'CloseWindow', sessionId: 'ps_1', reason: 'closed_by_client', at: AFTER })
      .then([]);
    given(pairingDecider, [])
      .when({ type: 'CloseWindow', sessionId: 'ps_x', reason: 'deadline', at: AFTER })
      .thenFails(NotFound);
  });

  it('records a join only inside an open window, and only once', () => {
    given(pairingDecider, [opened]).when(join()).then([joined()]);
    given(pairingDecider, [opened])
      .when(join({ at: AFTER }))
      .then([]);
    given(pairingDecider, [opened])
      .when(join({ sessionId: 'ps_other' }))
      .then([]);
    given(pairingDecider, [opened, closedBy('closed_by_client', T1)])
      .when(join())
      .then([]);
    given(pairingDecider, [opened, joined()]).when(join()).then([]);
  });

  it('refuses a join whose interview names a capability the catalogue does not know', () => {
    given(pairingDecider, [opened])
      .when(join({ capabilities: ['binary.switch', 'teleport.now'] }))
      .thenFails(InvalidInput, (e) => expect(e.reason).to.equal('unknown_capability'));
  });

  it('keeps a rejected address rejected when it joins a later window, until an operator clears it', () => {
    const history = [
      opened,
      joined(),
      rejected,
      closedBy('closed_by_client', T1),
      openSecond('ps_2', T1, AFTER),
    ];
    given(pairingDecider, history)
      .when(join({ sessionId: 'ps_2' }))
      .then([joined('rejected', 'ps_2')]);
    const cleared: PairingEvent = {
      type: 'CandidateRejectionCleared',
      data: { hubId: 'dev_hub', projectId: 'prj_1', ieeeAddr: IEEE, clearedAt: T1 },
    };
    given(pairingDecider, history)
      .when({ type: 'ClearRejection', hubId: 'dev_hub', projectId: 'prj_1', ieeeAddr: IEEE, at: T1 })
      .then([cleared]);
    given(pairingDecider, [...history, cleared])
      .when(join({ sessionId: 'ps_2' }))
      .then([joined('pending', 'ps_2')]);
    given(pairingDecider, [opened])
      .when({ type: 'ClearRejection', hubId: 'dev_hub', projectId: 'prj_1', ieeeAddr: IEEE, at: T1 })
      .thenFails(NotFound);
  });

  it('does not take an adopted device back as a new candidate', () => {
    const adopted: PairingEvent = {
      type: 'CandidateAdopted',
      data: { ...common, ieeeAddr: IEEE, state: 'adopted', deviceId: 'dev_new', adoptedAt: T1 },
    };
    given(pairingDecider, [
      opened,
      joined(),
      adopted,
      closedBy('closed_by_client', T1),
      openSecond('ps_2', T1, AFTER),
    ])
      .when(join({ sessionId: 'ps_2' }))
      .then([]);
  });

  it('decides a candidate once: adopting or rejecting it again is a conflict; an unknown one is not found', () => {
    const state = given(pairingDecider, [opened, joined(), rejected]);
    state
      .when({ type: 'AdoptCandidate', sessionId: 'ps_1', ieeeAddr: IEEE, deviceId: 'dev_x', at: T1 })
      .thenFails(Conflict, (e) => expect(e.details).to.deep.equal({ state: 'rejected' }));
    state
      .when({ type: 'RejectCandidate', sessionId: 'ps_1', ieeeAddr: IEEE, at: T1 })
      .thenFails(Conflict, (e) => expect(e.reason).to.equal('candidate_not_pending'));
    given(pairingDecider, [opened])
      .when({ type: 'RejectCandidate', sessionId: 'ps_1', ieeeAddr: IEEE, at: T1 })
      .thenFails(NotFound);
  });

  it('adopts into a draft device of the hub with one write denial per writable capability', () => {
    const { state } = given(pairingDecider, [opened, joined()]);
    const decision = decideAdoption(
      state,
      { type: 'AdoptCandidate', sessionId: 'ps_1', ieeeAddr: IEEE, deviceId: 'dev_new', at: T1 },
      { hubId: 'dev_hub', projectId: 'prj_1', siteId: 'site_1' },
    );
    expect(decision.writeBlocked).to.deep.equal(['binary.switch', 'actuator.relay']);
    expect(decision.pairing.map((e) => e.type)).to.deep.equal(['CandidateAdopted']);
    expect(decision.device.map((e) => e.type)).to.deep.equal([
      'DeviceRegistered',
      'CapabilityWriteDenied',
      'CapabilityWriteDenied',
    ]);
    expect(decision.device[0]!.data).to.include({
      deviceId: 'dev_new',
      parentHubId: 'dev_hub',
      siteId: 'site_1',
      kind: 'device',
      profile: 'draft',
      ieeeAddr: IEEE,
    });
  });

  it('gives every change the pairing_update fields', () => {
    expect(pairingUpdateOf(opened)).to.deep.equal({
      sessionId: 'ps_1',
      hubId: 'dev_hub',
      ieeeAddr: null,
      state: 'open',
      deviceId: null,
    });
    expect(pairingUpdateOf(joined())).to.deep.equal({
      sessionId: 'ps_1',
      hubId: 'dev_hub',
      ieeeAddr: IEEE,
      state: 'pending',
      deviceId: null,
    });
  });

  it('bounds the window length and never clamps', () => {
    expect(windowDurationSeconds(undefined)).to.equal(120);
    expect(windowDurationSeconds(30)).to.equal(30);
    expect(windowDurationSeconds(600)).to.equal(600);
    for (const bad of [29, 601, 45.5, Number.NaN])
      expect(() => windowDurationSeconds(bad)).to.throw(InvalidInput);
  });
});
