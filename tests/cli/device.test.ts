import { expect } from 'chai';
import { requestCommand } from '../../src/control/commands.js';
import { setCapabilityGrant } from '../../src/control/grants.js';
import { deviceStreamName } from '../../src/domain/devices/index.js';
import { createProject } from '../../src/identity/projects.js';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import { devcloud } from '../support/devcloud.js';
import { deviceOf, siteOf } from '../support/registry.js';

describe('devcloud device profile / status', function () {
  this.timeout(120_000);
  let api: TestApi;
  let deviceId: string;
  let projectId: string;

  before(async () => {
    api = await startTestApi();
    projectId = (await createProject(api.store, { name: 'cli' })).projectId;
    const siteId = await siteOf(api, projectId);
    deviceId = await deviceOf(api, projectId, siteId, { capabilities: ['actuator.relay'] });
  });
  after(() => api.close());

  const recorded = async () =>
    (await api.store.readStream(deviceStreamName(deviceId))).map((e) => ({ type: e.type, data: e.data }));

  it('verifies the profile and downgrades it, each an event naming the operator and the reason', async () => {
    const verified = await devcloud(
      api,
      'device',
      'profile',
      deviceId,
      'verified',
      '--reason',
      'lab tested',
      '--json',
    );
    expect(verified.code, verified.stderr).to.equal(0);
    expect(JSON.parse(verified.stdout)).to.deep.include({ deviceId, profile: 'verified', changed: true });
    await setCapabilityGrant(api.store, {
      projectId,
      clientId: 'cli_1',
      deviceId,
      capabilityKey: 'actuator.relay',
      write: true,
      now: new Date(),
    });
    const pending = await requestCommand(api.store, {
      projectId,
      clientId: 'cli_1',
      scopes: new Set(['commands:write']),
      deviceId,
      capabilityKey: 'actuator.relay',
      value: true,
      mode: 'desired',
      ttlSeconds: 600,
      confirm: true,
      now: new Date(),
    });
    const down = await devcloud(
      api,
      'device',
      'profile',
      deviceId,
      'draft',
      '--reason',
      'firmware 2.0',
      '--json',
    );
    expect(down.code, down.stderr).to.equal(0);
    expect(JSON.parse(down.stdout)).to.deep.include({
      revoked: ['actuator.relay'],
      cancelled: [pending.command.commandId],
    });
    const events = await recorded();
    const downgrade = events.find((e) => e.type === 'DeviceProfileDowngraded')!;
    expect(downgrade.data).to.deep.include({
      reason: 'firmware 2.0',
      by: { kind: 'operator', reason: 'firmware 2.0' },
    });
    expect(events.find((e) => e.type === 'DeviceProfileVerified')!.data).to.deep.include({
      reason: 'lab tested',
    });
  });

  it('refuses a --reason with control characters (a newline, an escape sequence, a bidi override): exit 1, nothing recorded', async () => {
    const before = (await recorded()).length;
    const reasons = ['ok\nforged row', 'ok \u001b[1A\u001b[2K', 'ok \u202egnp.exe', 'tab\there'];
    // Each is refused before anything is written (checked below): the CLI runs, seconds of start-up each, go
    // side by side.
    const runs = await Promise.all(
      reasons.map((reason) => devcloud(api, 'device', 'profile', deviceId, 'verified', '--reason', reason)),
    );
    reasons.forEach((reason, i) => {
      expect(runs[i]!.code, JSON.stringify(reason)).to.equal(1);
      expect(runs[i]!.stderr).to.equal(
        'devcloud: device profile: --reason must not contain control characters (newlines, tabs, escape sequences, bidi controls)\n',
      );
    });
    expect((await recorded()).length).to.equal(before);
  });

  it('moves the lifecycle; a forbidden move exits non-zero with a one-line message and records nothing', async () => {
    const retired = await devcloud(api, 'device', 'status', deviceId, 'retired', '--reason', 'end of life');
    expect(retired.code, retired.stderr).to.equal(0);
    const before = (await recorded()).length;
    const back = await devcloud(api, 'device', 'status', deviceId, 'active');
    expect(back.code).to.equal(1);
    expect(back.stderr).to.equal(
      'devcloud: device status: a retired device cannot become active (retired is final)\n',
    );
    expect((await recorded()).length).to.equal(before);
    // Two more refusals, of an unknown status and an unknown device: side by side.
    const [unknown, missing] = await Promise.all([
      devcloud(api, 'device', 'status', deviceId, 'asleep'),
      devcloud(api, 'device', 'status', 'dev_nowhere', 'active'),
    ]);
    expect(unknown.code).to.equal(1);
    expect(unknown.stderr).to.match(/^devcloud: device status: expected one of active, /);
    expect(missing.stderr).to.equal('devcloud: device: no such device\n');
  });
});
