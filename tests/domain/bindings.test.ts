import { expect } from 'chai';
import { bindingDecider, type BindingEvent, type CreateBinding } from '../../src/domain/bindings/index.js';
import { Conflict, InvalidInput, NotFound } from '../../src/domain/errors.js';
import { given } from '../support/decider-spec.js';

/** The binding the tests create: the command asks for it and the event records it with the same fields. */
const BINDING = {
  bindingId: 'bnd_1',
  projectId: 'prj_1',
  deviceId: 'dev_1',
  resourceType: 'room',
  resourceId: 'room-42',
  channelMapping: { 'environment.temperature': 'air_temp' },
  requestFingerprint: 'f1',
  idempotencyKey: 'key-1',
};
const AT = '2025-01-01T00:00:00.000Z';

const create = (overrides: Partial<CreateBinding> = {}): CreateBinding => ({
  type: 'CreateBinding',
  ...BINDING,
  at: AT,
  device: { projectId: 'prj_1' },
  ...overrides,
});

const created: BindingEvent = { type: 'BindingCreated', data: { ...BINDING, createdAt: AT } };

describe('binding decider', () => {
  it('binds a registered device of the same project', () => {
    given(bindingDecider, []).when(create()).then([created]);
  });

  it('answers a retry with the same request by recording nothing (the stored binding stands)', () => {
    const retry = given(bindingDecider, [created]);
    retry.when(create({ bindingId: 'bnd_2', at: '2025-01-02T00:00:00.000Z' })).then([]);
    expect(retry.state.binding?.bindingId).to.equal('bnd_1');
  });

  it('refuses the same key with a different request', () => {
    given(bindingDecider, [created])
      .when(create({ requestFingerprint: 'f2' }))
      .thenFails(Conflict, (e) => expect(e.reason).to.equal('idempotency_key_reused'));
  });

  it('cannot tell a missing device from one of another project', () => {
    given(bindingDecider, [])
      .when(create({ device: undefined }))
      .thenFails(NotFound);
    given(bindingDecider, [])
      .when(create({ device: { projectId: 'prj_2' } }))
      .thenFails(NotFound);
  });

  it('refuses a channel mapping key that is not a catalogue key', () => {
    given(bindingDecider, [])
      .when(create({ channelMapping: { 'environment.temp': 'x' } }))
      .thenFails(InvalidInput, (e) => expect(e.field).to.equal('channelMapping.environment.temp'));
  });
});
