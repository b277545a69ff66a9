import { expect } from 'chai';
import { decideAck, decideExpiry, decideSend } from '../../src/domain/control/delivery-decisions.js';
import { controlFolding, type ControlEvent } from '../../src/domain/control/index.js';
import { deviceStreamName } from '../../src/domain/devices/decider.js';
import { isDisplaySafeText } from '../../src/domain/text.js';
import { decideOnStream } from '../../src/eventstore/handle-command.js';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import { devcloud } from '../support/devcloud.js';
import { controls } from '../support/commands.js';
import { deviceOf, siteOf } from '../support/registry.js';
import { createTenant } from '../support/tenants.js';

async function jsonLines(api: TestApi, ...args: string[]): Promise<Record<string, unknown>[]> {
  const run = await devcloud(api, ...args, '--json');
  expect(run.code, run.stderr).to.equal(0);
  return run.stdout
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

// A scripted history on a clock of its own (decision times are what the audit reports).
const BASE = Date.parse('2030-05-01T08:00:00.000Z');
const t = (seconds: number) => new Date(BASE + seconds * 1000).toISOString();

describe('devcloud audit: grants and commands replayed from the event store', function () {
  this.timeout(180_000);
  let api: TestApi;
  let projectId: string;
  let d1: string;
  let d2: string;
  let d3: string;
  const ids: Record<string, string> = {};
  /** Position of each recorded event, by device, type and decision time. */
  const positions = new Map<string, string>();
  const positionOf = (deviceId: string, type: string, at: string, commandId?: string) => {
    const position = positions.get([deviceId, type, at, commandId ?? ''].join('|'));
    expect(position, `${type} at ${at}`).to.be.a('string');
    return position!;
  };

  before(async () => {
    api = await startTestApi();
    const tenant = await createTenant(api, ['devices:read']);
    const other = await createTenant(api, ['devices:read']);
    projectId = tenant.projectId;
    const site = await siteOf(api, projectId);
    const capabilities = ['binary.switch', 'actuator.relay'];
    d1 = await deviceOf(api, projectId, site, { capabilities });
    d2 = await deviceOf(api, projectId, site, { capabilities: ['binary.switch'] });
    d3 = await deviceOf(api, other.projectId, await siteOf(api, other.projectId), {
      capabilities: ['binary.switch'],
    });

    let clock = BASE;
    const at = (seconds: number) => {
      clock = BASE + seconds * 1000;
    };
    const mine = controls(api.store, { projectId, clientId: 'cli_ops', now: () => clock });
    const theirs = controls(api.store, {
      projectId: other.projectId,
      clientId: 'cli_other',
      now: () => clock,
    });
    const record = (deviceId: string, decide: (state: never) => ControlEvent[]) =>
      decideOnStream(api.store, deviceStreamName(deviceId), controlFolding, (state) => ({
        events: decide(state as never),
        result: undefined,
      }));
    const send = (deviceId: string, commandId: string, seconds: number) =>
      record(
        deviceId,
        (s) =>
          decideSend(s, commandId, 'accepted', { agentId: 'agt_edge', now: new Date(t(seconds)) }).events,
      );
    const ack = (deviceId: string, commandId: string, seconds: number, status: 'applied' | 'failed') =>
      record(deviceId, (s) => {
        const decision = decideAck(s, { agentId: 'agt_edge', commandId, status, now: new Date(t(seconds)) });
        return decision.accepted ? decision.events : [];
      });

    at(0);
    await mine.grant(d1, 'binary.switch');
    at(60);
    await mine.verify(d1);
    await mine.grant(d1, 'actuator.relay');
    at(120);
    ids.c1 = await mine.command(d1, { capability: 'binary.switch', value: true, mode: 'imperative' });
    await send(d1, ids.c1, 121);
    await ack(d1, ids.c1, 122, 'applied');
    at(180);
    ids.c2 = await mine.command(d1, {
      capability: 'actuator.relay',
      value: true,
      mode: 'desired',
      ttlSeconds: 30,
    });
    await send(d1, ids.c2, 181);
    await record(d1, (s) => decideExpiry(s, new Date(t(211))));
    await ack(d1, ids.c2, 220, 'applied');
    at(240);
    await mine.grant(d1, 'binary.switch', false);
    at(300);
    await mine.grant(d2, 'binary.switch');
    await theirs.grant(d3, 'binary.switch');
    at(360);
    ids.c3 = await mine.command(d2, { capability: 'binary.switch', value: false, mode: 'desired' });
    at(420);
    await mine.grant(d2, 'binary.switch', false);

    for (const deviceId of [d1, d2, d3]) {
      for (const e of await api.store.readStream(deviceStreamName(deviceId))) {
        const data = e.data as Record<string, string>;
        const when = data.at ?? data.acceptedAt ?? data.sentAt;
        if (when) positions.set([deviceId, e.type, when, data.commandId ?? ''].join('|'), e.position);
      }
    }
  });
  after(async () => {
    await api?.close();
  });

  const grantRow = (deviceId: string, capability: string, change: string, seconds: number) => ({
    position: positionOf(
      deviceId,
      `CapabilityWrite${change[0]!.toUpperCase()}${change.slice(1)}`,
      t(seconds),
    ),
    at: t(seconds),
    projectId,
    deviceId,
    capability,
    change,
    by: 'client:cli_ops',
  });

  const expectedGrants = () => [
    grantRow(d1, 'binary.switch', 'granted', 0),
    grantRow(d1, 'actuator.relay', 'granted', 60),
    grantRow(d1, 'binary.switch', 'revoked', 240),
    grantRow(d2, 'binary.switch', 'granted', 300),
    grantRow(d2, 'binary.switch', 'revoked', 420),
  ];

  const inForce = (deviceId: string, capability: string, seconds: number, asOf: string, profile: string) => ({
    asOf,
    projectId,
    deviceId,
    capability,
    grantedAt: t(seconds),
    by: 'client:cli_ops',
    position: positionOf(deviceId, 'CapabilityWriteGranted', t(seconds)),
    deviceStatus: 'active',
    profile,
  });

  const step = (
    deviceId: string,
    command: string,
    type: string,
    seconds: number,
    fields: { step: string; status: string; by: string; detail: string },
    what: { capability: string; value: boolean; mode: string },
  ) => ({
    position: positionOf(deviceId, type, t(seconds), ids[command]),
    at: t(seconds),
    projectId,
    deviceId,
    commandId: ids[command],
    ...fields,
    ...what,
  });

  const expectedCommandsOfD1 = () => {
    const c1 = { capability: 'binary.switch', value: true, mode: 'imperative' };
    const c2 = { capability: 'actuator.relay', value: true, mode: 'desired' };
    return [
      step(
        d1,
        'c1',
        'CommandAccepted',
        120,
        { step: 'accepted', status: 'queued', by: 'client:cli_ops', detail: 'ttl 60s' },
        c1,
      ),
      step(
        d1,
        'c1',
        'CommandSent',
        121,
        { step: 'sent', status: 'sent', by: 'system', detail: 'attempt 1 to agt_edge' },
        c1,
      ),
      step(
        d1,
        'c1',
        'CommandSucceeded',
        122,
        { step: 'succeeded', status: 'succeeded', by: 'agent:agt_edge', detail: '' },
        c1,
      ),
      step(
        d1,
        'c2',
        'CommandAccepted',
        180,
        { step: 'accepted', status: 'queued', by: 'client:cli_ops', detail: 'ttl 30s' },
        c2,
      ),
      step(
        d1,
        'c2',
        'CommandSent',
        181,
        { step: 'sent', status: 'sent', by: 'system', detail: 'attempt 1 to agt_edge' },
        c2,
      ),
      step(
        d1,
        'c2',
        'CommandExpired',
        211,
        { step: 'expired', status: 'expired', by: 'system', detail: 'ttl ended' },
        c2,
      ),
      step(
        d1,
        'c2',
        'CommandAckIgnored',
        220,
        { step: 'ack_ignored', status: 'expired', by: 'agent:agt_edge', detail: 'late applied' },
        c2,
      ),
    ];
  };

  /**
   * Every answer the test checks, as the CLI prints it. Only reads: the CLI runs, seconds of start-up each,
   * go side by side.
   */
  async function answers() {
    const [grants, asOf, commandsOfD1, commandsFrom, table] = await Promise.all([
      jsonLines(api, 'audit', 'grants', '--project', projectId),
      jsonLines(api, 'audit', 'grants', '--project', projectId, '--as-of', t(270)),
      jsonLines(api, 'audit', 'commands', '--device', d1),
      jsonLines(api, 'audit', 'commands', '--project', projectId, '--from', t(300)),
      devcloud(api, 'audit', 'grants', '--device', d1).then((run) => run.stdout),
    ]);
    return { grants, asOf, commandsOfD1, commandsFrom, table };
  }

  let first: Awaited<ReturnType<typeof answers>>;

  it('audit grants: every change of the project, oldest first, with who, when and the event position', async () => {
    first = await answers();
    expect(first.grants).to.deep.equal(expectedGrants());
  });

  it('audit grants --as-of: the grants in force at that instant, with the device lifecycle and profile then', async () => {
    expect(first.asOf).to.deep.equal([inForce(d1, 'actuator.relay', 60, t(270), 'verified')]);
    const [atFive, beforeAny] = await Promise.all([
      jsonLines(api, 'audit', 'grants', '--as-of', t(300), '--project', projectId),
      jsonLines(api, 'audit', 'grants', '--as-of', t(-1), '--project', projectId),
    ]);
    expect(atFive).to.deep.equal([
      inForce(d1, 'actuator.relay', 60, t(300), 'verified'),
      inForce(d2, 'binary.switch', 300, t(300), 'draft'),
    ]);
    expect(beforeAny).to.deep.equal([]);
  });

  it('audit commands: every step with who, outcome and position; a late ack shows as ignored', async () => {
    expect(first.commandsOfD1).to.deep.equal(expectedCommandsOfD1());
    const c3 = { capability: 'binary.switch', value: false, mode: 'desired' };
    expect(first.commandsFrom).to.deep.equal([
      step(
        d2,
        'c3',
        'CommandAccepted',
        360,
        { step: 'accepted', status: 'queued', by: 'client:cli_ops', detail: 'ttl 60s' },
        c3,
      ),
      step(
        d2,
        'c3',
        'CommandCancelled',
        420,
        { step: 'cancelled', status: 'cancelled', by: 'client:cli_ops', detail: 'grant_revoked' },
        c3,
      ),
    ]);
  });

  it('prints a table on a terminal and refuses malformed or contradictory options', async () => {
    const lines = first.table.trim().split('\n');
    expect(lines[0]).to.match(/^POSITION\s+AT\s+DEVICEID\s+CAPABILITY\s+CHANGE\s+BY$/);
    expect(lines).to.have.length(4);
    expect(lines[3]).to.include('revoked').and.include(d1).and.include(t(240));
    // Each CLI start costs seconds on a busy machine: two refusals stand for the option checks.
    const refusals = [
      ['audit', 'grants', '--as-of', 'yesterday'],
      ['audit', 'grants', '--as-of', t(1), '--from', t(0)],
    ];
    const runs = await Promise.all(refusals.map((bad) => devcloud(api, ...bad)));
    refusals.forEach((bad, i) => {
      expect(runs[i]!.code, bad.join(' ')).to.equal(1);
      expect(runs[i]!.stderr).to.match(/^devcloud: audit/);
    });
  });

  it('prints stored text with control characters escaped, one row each, and exactly with --json', async () => {
    // Stored as an agent could before such text was refused at ingress: the decider takes it as it comes.
    const tenant = await createTenant(api, ['devices:read']);
    const device = await deviceOf(api, tenant.projectId, await siteOf(api, tenant.projectId), {
      capabilities: ['binary.switch'],
    });
    const c = controls(api.store, { projectId: tenant.projectId });
    await c.grant(device, 'binary.switch');
    const commandId = await c.command(device, {
      capability: 'binary.switch',
      value: true,
      mode: 'imperative',
    });
    const detail = 'ok\n\u001b[1A\u001b[2K\u202eforged';
    await decideOnStream(api.store, deviceStreamName(device), controlFolding, (state) => {
      const now = new Date();
      const sent = decideSend(state, commandId, 'accepted', { agentId: 'agt_edge', now }).events;
      return { events: sent, result: undefined };
    });
    await decideOnStream(api.store, deviceStreamName(device), controlFolding, (state) => {
      const decision = decideAck(state, {
        agentId: 'agt_edge',
        commandId,
        status: 'failed',
        detail,
        now: new Date(),
      });
      return { events: decision.accepted ? decision.events : [], result: undefined };
    });

    const table = await devcloud(api, 'audit', 'commands', '--device', device);
    expect(table.code, table.stderr).to.equal(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines, table.stdout).to.have.length(4); // the header, accepted, sent, failed
    expect(lines[3]).to.match(/\bfailed\b/);
    expect(lines[3]).to.include('agent_reported: ok\\x0a\\x1b[1A\\x1b[2K\\u{202e}forged');
    expect(isDisplaySafeText(table.stdout.replaceAll('\n', '')), 'nothing but line ends steers the terminal')
      .to.be.true;

    const rows = await jsonLines(api, 'audit', 'commands', '--device', device);
    expect(rows.map((r) => r.detail)).to.deep.equal([
      'ttl 60s',
      'attempt 1 to agt_edge',
      `agent_reported: ${detail}`,
    ]);
  });

  it('answers the same after devcloud projections rebuild', async () => {
    const rebuilt = await devcloud(api, 'projections', 'rebuild', '--json');
    expect(rebuilt.code, rebuilt.stderr).to.equal(0);
    expect(await answers()).to.deep.equal(first);
  });
});
