import { expect } from 'chai';
import { setDeviceProfile, setDeviceStatus } from '../../src/control/device-admin.js';
import { deviceStreamName } from '../../src/domain/devices/index.js';
import { createClient } from '../../src/identity/clients.js';
import { ClientSecretHasher } from '../../src/identity/secret-hash.js';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import { call, deviceOf, fingerprint, siteOf, type Answer } from '../support/registry.js';
import { createTenant, requestToken, type Tenant } from '../support/tenants.js';

const CONTROL = ['binary.switch', 'actuator.relay', 'actuator.contactor', 'environment.temperature'];
const ALL_SCOPES = ['devices:read', 'commands:read', 'commands:write', 'commands:high_risk', 'grants:admin'];

interface CommandBody {
  command: { commandId: string; status: string; deviceId: string; capabilityKey: string; value: unknown };
}

describe('control plane API: grants and commands', function () {
  this.timeout(120_000);
  let api: TestApi;
  let clock = Date.now();
  let tenant: Tenant;
  let other: Tenant;
  let token: string;
  let siteId: string;

  before(async () => {
    api = await startTestApi({}, { now: () => clock });
    tenant = await createTenant(api, ALL_SCOPES);
    other = await createTenant(api, ALL_SCOPES);
    token = await tenant.token();
    siteId = await siteOf(api, tenant.projectId);
  });
  after(() => api.close());

  /** A device of the tenant; verified (as an operator would) unless asked for a draft. */
  async function device(profile: 'draft' | 'verified' = 'verified'): Promise<string> {
    const deviceId = await deviceOf(api, tenant.projectId, siteId, { capabilities: CONTROL });
    if (profile === 'verified')
      await setDeviceProfile(api.store, { deviceId, profile, now: new Date(clock) });
    return deviceId;
  }

  const putGrant = (deviceId: string, capabilityKey: string, write = true, bearer = token) =>
    call(api, 'PUT', `/v1/devices/${deviceId}/capability-grants`, {
      token: bearer,
      body: { capabilityKey, write },
    });

  const post = (
    deviceId: string,
    body: Record<string, unknown>,
    options: { key?: string; bearer?: string } = {},
  ) =>
    call(api, 'POST', `/v1/devices/${deviceId}/commands`, {
      token: options.bearer ?? token,
      body: { mode: 'imperative', ttlSeconds: 60, ...body },
      headers: options.key ? { 'Idempotency-Key': options.key } : {},
    });

  /**
   * GET `path` until `done` holds (bounded): read models follow the event store a moment later, and a
   * catch-up only sees events older than every transaction still open.
   */
  async function projected(path: string, done: (answer: Answer) => boolean): Promise<Answer> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const answer = await call(api, 'GET', path, { token });
      if (done(answer) || Date.now() > deadline) return answer;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  const relayOn = { capabilityKey: 'actuator.relay', value: true, confirm: true };
  const contactorOn = { capabilityKey: 'actuator.contactor', value: true, confirm: true };

  const reasonsOf = (answer: Answer) => {
    expect(answer.status, answer.text).to.equal(403);
    return (answer.body as { reasons: string[] }).reasons;
  };

  async function armed(capabilities = ['actuator.relay', 'actuator.contactor']): Promise<string> {
    const deviceId = await device();
    for (const key of capabilities) expect((await putGrant(deviceId, key)).status).to.equal(200);
    return deviceId;
  }

  describe('capability grants', () => {
    it('lists every writable capability with its state, who changed it last and when', async () => {
      const deviceId = await device('draft');
      expect((await putGrant(deviceId, 'binary.switch')).status).to.equal(200);
      const answer = await projected(`/v1/devices/${deviceId}/capability-grants`, (a) => a.status === 200);
      expect(answer.status).to.equal(200);
      const grants = (answer.body as { grants: Record<string, unknown>[] }).grants;
      expect(grants.map((g) => g.capabilityKey)).to.deep.equal([
        'binary.switch',
        'actuator.relay',
        'actuator.contactor',
      ]);
      expect(grants[0]).to.deep.include({
        safetyClass: 'S1',
        write: true,
        state: 'granted',
        changedBy: { kind: 'client', clientId: tenant.clientId },
      });
      expect(grants[1]).to.deep.include({ write: false, state: 'none', changedBy: null, changedAt: null });
    });

    it('S2/S3 on a draft profile answer 409 and record nothing; S1 may be enabled on a draft', async () => {
      const deviceId = await device('draft');
      const before = (await api.store.readStream(deviceStreamName(deviceId))).length;
      for (const key of ['actuator.relay', 'actuator.contactor']) {
        const answer = await putGrant(deviceId, key);
        expect(answer.status).to.equal(409);
        expect(answer.body).to.deep.include({ error: 'conflict', reason: 'profile_not_verified' });
      }
      expect((await api.store.readStream(deviceStreamName(deviceId))).length).to.equal(before);
      expect(((await putGrant(deviceId, 'binary.switch')).body as { grant: unknown }).grant).to.deep.include({
        write: true,
      });
    });

    it('grants:revoke may revoke but not enable (403 without reasons); foreign devices are 404', async () => {
      const deviceId = await armed(['actuator.relay']);
      const revoker = await createClient(api.store, new ClientSecretHasher(api.db.pool), {
        projectId: tenant.projectId,
        scopes: ['grants:revoke'],
        authMethod: 'post',
      });
      const revokeToken = await requestToken(api.baseUrl, revoker, 'post', undefined);
      const enable = await putGrant(deviceId, 'binary.switch', true, revokeToken);
      expect(enable.status).to.equal(403);
      expect(enable.body).to.deep.equal({ error: 'forbidden' });
      expect((await putGrant(deviceId, 'actuator.relay', false, revokeToken)).status).to.equal(200);
      const foreign = await putGrant(deviceId, 'actuator.relay', true, await other.token());
      const missing = await putGrant('dev_missing', 'actuator.relay', true, await other.token());
      expect(foreign.status).to.equal(404);
      expect(fingerprint(foreign)).to.deep.equal(fingerprint(missing));
      expect((await putGrant(deviceId, 'water.leak')).status).to.equal(422);
    });
  });

  describe('POST commands: the safety gate', () => {
    it('accepts a granted, confirmed S2 command: 201 with command.commandId, queued', async () => {
      const deviceId = await armed(['actuator.relay']);
      const answer = await post(deviceId, relayOn, { key: 'ok-1' });
      expect(answer.status, answer.text).to.equal(201);
      const { command } = answer.body as CommandBody;
      expect(command).to.deep.include({
        status: 'queued',
        deviceId,
        capabilityKey: 'actuator.relay',
        value: true,
      });
      expect(command.commandId).to.match(/^cmd_/);
    });

    it('refuses each failing condition with its reason, all of them listed', async () => {
      const deviceId = await device();
      expect(reasonsOf(await post(deviceId, { capabilityKey: 'actuator.nope', value: true }))).to.deep.equal([
        'capability_unknown',
      ]);
      expect(
        reasonsOf(await post(deviceId, { capabilityKey: 'environment.temperature', value: 1 })),
      ).to.deep.equal(['capability_not_writable']);
      expect(reasonsOf(await post(deviceId, { capabilityKey: 'actuator.relay', value: true }))).to.deep.equal(
        ['grant_missing', 'confirm_required'],
      );
      const draft = await device('draft');
      expect(reasonsOf(await post(draft, { ...contactorOn, confirm: false }))).to.deep.equal([
        'profile_not_verified',
        'grant_missing',
        'confirm_required',
        'challenge_required',
      ]);
      const held = await armed(['actuator.relay']);
      await setDeviceStatus(api.store, { deviceId: held, status: 'quarantined', now: new Date(clock) });
      expect(reasonsOf(await post(held, relayOn))).to.deep.equal(['device_lifecycle']);
    });

    it('a missing and a foreign device answer the same 403 device_not_addressable, never 404', async () => {
      const deviceId = await armed(['actuator.relay']);
      const otherToken = await other.token();
      const foreign = await post(deviceId, relayOn, { bearer: otherToken });
      const missing = await post('dev_nowhere', relayOn, { bearer: otherToken });
      expect(reasonsOf(foreign)).to.deep.equal(['device_not_addressable']);
      expect(fingerprint(foreign)).to.deep.equal(fingerprint(missing));
    });

    it('a revoke refuses the next command and cancels the pending ones of the pair', async () => {
      const deviceId = await armed(['actuator.relay']);
      const pending = (await post(deviceId, { ...relayOn, mode: 'desired' })).body as CommandBody;
      expect((await putGrant(deviceId, 'actuator.relay', false)).status).to.equal(200);
      expect(reasonsOf(await post(deviceId, relayOn))).to.deep.equal(['grant_missing']);
      const read = await projected(
        `/v1/commands/${pending.command.commandId}`,
        (a) => (a.body as CommandBody | undefined)?.command.status === 'cancelled',
      );
      expect((read.body as { command: { outcome: unknown } }).command.outcome).to.deep.equal({
        reason: 'grant_revoked',
      });
    });

    it('422 for a value that fails its capability, never coerced; for mode and ttlSeconds out of their range', async () => {
      const deviceId = await armed(['actuator.relay']);
      for (const value of [1, '1', 'on', 'true']) {
        const answer = await post(deviceId, { ...relayOn, value });
        expect(answer.status, JSON.stringify(value)).to.equal(422);
        expect(answer.body).to.deep.include({ error: 'invalid_value', field: 'value' });
      }
      for (const ttlSeconds of [0, 86_401, 1.5, '60']) {
        const answer = await post(deviceId, { ...relayOn, ttlSeconds });
        expect(answer.status, JSON.stringify(ttlSeconds)).to.equal(422);
        expect(answer.body).to.deep.include({ field: 'ttlSeconds' });
      }
      expect((await post(deviceId, { ...relayOn, mode: 'once' })).status).to.equal(422);
      expect((await post(deviceId, { ...relayOn, mode: undefined })).body).to.deep.equal({
        error: 'invalid_request',
        reason: 'missing',
        field: 'mode',
      });
      expect((await post(deviceId, { ...relayOn, ttlSeconds: 86_400 })).status).to.equal(201);
    });

    it('a gate refusal answers before a value failure (403, not 422)', async () => {
      const deviceId = await device();
      expect(reasonsOf(await post(deviceId, { ...relayOn, value: 'on' }))).to.deep.equal(['grant_missing']);
    });

    it('an empty or over-long capabilityKey or challengeId: 422 empty / too_long on that field', async () => {
      const deviceId = await armed();
      const cases: [Record<string, unknown>, string, string][] = [
        [{ ...contactorOn, capabilityKey: '' }, 'empty', 'capabilityKey'],
        [{ ...contactorOn, capabilityKey: 'x'.repeat(129) }, 'too_long', 'capabilityKey'],
        [{ ...contactorOn, challengeId: '' }, 'empty', 'challengeId'],
        [{ ...contactorOn, challengeId: 'c'.repeat(65) }, 'too_long', 'challengeId'],
        [{ ...contactorOn, capabilityKey: 7 }, 'wrong_type', 'capabilityKey'],
        [{ ...contactorOn, challengeId: 7 }, 'wrong_type', 'challengeId'],
      ];
      for (const [body, reason, field] of cases) {
        const answer = await post(deviceId, body);
        expect(answer.status, JSON.stringify(body)).to.equal(422);
        expect(answer.body).to.deep.equal({ error: 'invalid_request', reason, field });
      }
    });
  });

  describe('idempotency', () => {
    it('same key and body: the same 201 and commandId; other value or capability: 409', async () => {
      const deviceId = await armed(['actuator.relay', 'binary.switch']);
      const first = await post(deviceId, relayOn, { key: 'same-1' });
      const again = await post(deviceId, relayOn, { key: 'same-1' });
      expect(again.status).to.equal(201);
      expect(again.text).to.equal(first.text);
      const otherValue = await post(deviceId, { ...relayOn, value: false }, { key: 'same-1' });
      expect(otherValue.status).to.equal(409);
      expect(otherValue.body).to.deep.equal({ error: 'conflict', reason: 'idempotency_key_reused' });
      const otherCapability = await post(
        deviceId,
        { capabilityKey: 'binary.switch', value: true },
        { key: 'same-1' },
      );
      expect(otherCapability.status).to.equal(409);
      const inBody = await post(deviceId, { ...relayOn, idempotencyKey: 'same-1' });
      expect(inBody.text).to.equal(first.text);
    });

    it('a key accepted on one device answers 409 on another, whether that device would accept or refuse', async () => {
      const first = await armed(['actuator.relay']);
      const accepting = await armed(['actuator.relay']);
      const refusing = await device();
      expect((await post(first, relayOn, { key: 'cross-1' })).status).to.equal(201);
      // The other device would accept: its append meets the existing claim.
      const onAccepting = await post(accepting, relayOn, { key: 'cross-1' });
      expect(onAccepting.status).to.equal(409);
      expect(onAccepting.body).to.deep.equal({ error: 'conflict', reason: 'idempotency_key_reused' });
      // The other device would refuse (no grant): the claim answers first, not the gate.
      const onRefusing = await post(refusing, relayOn, { key: 'cross-1' });
      expect(onRefusing.status).to.equal(409);
      expect(onRefusing.body).to.deep.equal({ error: 'conflict', reason: 'idempotency_key_reused' });
      // Unclaimed, the same refusal is the gate's.
      expect(reasonsOf(await post(refusing, relayOn, { key: 'cross-2' }))).to.deep.equal(['grant_missing']);
    });

    it('without a key every POST is a new command', async () => {
      const deviceId = await armed(['actuator.relay']);
      const a = (await post(deviceId, relayOn)).body as CommandBody;
      const b = (await post(deviceId, relayOn)).body as CommandBody;
      expect(a.command.commandId).to.not.equal(b.command.commandId);
    });

    it('a burst of 50 concurrent POSTs with one key through HTTP: all 201 with one commandId, one acceptance', async () => {
      const deviceId = await armed(['actuator.relay']);
      const answers = await Promise.all(
        Array.from({ length: 50 }, () => post(deviceId, relayOn, { key: 'burst' })),
      );
      expect(answers.map((a) => a.status)).to.deep.equal(Array(50).fill(201));
      expect(new Set(answers.map((a) => (a.body as CommandBody).command.commandId)).size).to.equal(1);
      const accepted = (await api.store.readStream(deviceStreamName(deviceId))).filter(
        (e) => e.type === 'CommandAccepted',
      );
      expect(accepted).to.have.length(1);
    });
  });

  describe('S3 two-step challenge', () => {
    const challengeOf = (answer: Answer) => {
      expect(reasonsOf(answer)).to.deep.equal(['challenge_required']);
      return (answer.body as { challenge: { challengeId: string; expiresAt: string } }).challenge;
    };

    it('answered correctly: accepted, and the challenge cannot be used again', async () => {
      const deviceId = await armed();
      const challenge = challengeOf(await post(deviceId, contactorOn, { key: 's3-a' }));
      expect(Date.parse(challenge.expiresAt) - clock).to.equal(60_000);
      const accepted = await post(
        deviceId,
        { ...contactorOn, challengeId: challenge.challengeId },
        { key: 's3-b' },
      );
      expect(accepted.status, accepted.text).to.equal(201);
      const reused = await post(
        deviceId,
        { ...contactorOn, challengeId: challenge.challengeId },
        { key: 's3-c' },
      );
      expect(reasonsOf(reused)).to.deep.equal(['challenge_reused']);
    });

    it('expired after 60 s by the server clock', async () => {
      const deviceId = await armed();
      const challenge = challengeOf(await post(deviceId, contactorOn));
      clock += 60_000;
      try {
        const late = await post(deviceId, { ...contactorOn, challengeId: challenge.challengeId });
        expect(reasonsOf(late)).to.deep.equal(['challenge_expired']);
      } finally {
        clock -= 60_000;
      }
    });

    it('answered by another client of the project, or with another value: refused with its own reason', async () => {
      const deviceId = await armed();
      const challenge = challengeOf(await post(deviceId, contactorOn));
      const colleague = await createClient(api.store, new ClientSecretHasher(api.db.pool), {
        projectId: tenant.projectId,
        scopes: ['commands:write', 'commands:high_risk'],
        authMethod: 'post',
      });
      const colleagueToken = await requestToken(api.baseUrl, colleague, 'post', undefined);
      const foreign = await post(
        deviceId,
        { ...contactorOn, challengeId: challenge.challengeId },
        { bearer: colleagueToken },
      );
      expect(reasonsOf(foreign)).to.deep.equal(['challenge_foreign']);
      const otherValue = await post(deviceId, {
        ...contactorOn,
        value: false,
        challengeId: challenge.challengeId,
      });
      expect(reasonsOf(otherValue)).to.deep.equal(['challenge_mismatch']);
      const unknown = await post(deviceId, { ...contactorOn, challengeId: 'chl_made_up' });
      expect(reasonsOf(unknown)).to.deep.equal(['challenge_invalid']);
    });

    it('answered with another mode or TTL: challenge_mismatch; the exact command is still accepted', async () => {
      const deviceId = await armed();
      const challenge = challengeOf(
        await post(deviceId, { ...contactorOn, mode: 'imperative', ttlSeconds: 60 }),
      );
      const answer = { ...contactorOn, challengeId: challenge.challengeId };
      const otherMode = await post(deviceId, { ...answer, mode: 'desired', ttlSeconds: 60 });
      expect(reasonsOf(otherMode)).to.deep.equal(['challenge_mismatch']);
      const otherTtl = await post(deviceId, { ...answer, mode: 'imperative', ttlSeconds: 30 });
      expect(reasonsOf(otherTtl)).to.deep.equal(['challenge_mismatch']);
      const both = await post(deviceId, { ...answer, mode: 'desired', ttlSeconds: 86_400 });
      expect(reasonsOf(both)).to.deep.equal(['challenge_mismatch']);
      const exact = await post(deviceId, { ...answer, mode: 'imperative', ttlSeconds: 60 });
      expect(exact.status, exact.text).to.equal(201);
      expect((exact.body as CommandBody).command).to.deep.include({ mode: 'imperative', ttlSeconds: 60 });
    });

    it('a revoke and re-grant, or a quarantine and release, after the challenge void it', async () => {
      const deviceId = await armed();
      const regranted = challengeOf(await post(deviceId, contactorOn));
      expect((await putGrant(deviceId, 'actuator.contactor', false)).status).to.equal(200);
      expect((await putGrant(deviceId, 'actuator.contactor', true)).status).to.equal(200);
      const afterRegrant = await post(deviceId, { ...contactorOn, challengeId: regranted.challengeId });
      expect(reasonsOf(afterRegrant)).to.deep.equal(['challenge_voided']);

      const released = challengeOf(await post(deviceId, contactorOn));
      await setDeviceStatus(api.store, { deviceId, status: 'quarantined', now: new Date(clock) });
      await setDeviceStatus(api.store, { deviceId, status: 'active', now: new Date(clock) });
      const afterRelease = await post(deviceId, { ...contactorOn, challengeId: released.challengeId });
      expect(reasonsOf(afterRelease)).to.deep.equal(['challenge_voided']);

      // A fresh challenge, issued to the device as it now stands, is answerable.
      const fresh = challengeOf(await post(deviceId, contactorOn));
      expect((await post(deviceId, { ...contactorOn, challengeId: fresh.challengeId })).status).to.equal(201);
    });

    it('a challengeId on an S1 or S2 command: 422 challenge_not_applicable, nothing accepted', async () => {
      const deviceId = await armed(['actuator.relay', 'binary.switch']);
      for (const body of [relayOn, { capabilityKey: 'binary.switch', value: true }]) {
        const answer = await post(deviceId, { ...body, challengeId: 'chl_anything' });
        expect(answer.body).to.deep.equal({
          error: 'invalid_request',
          reason: 'challenge_not_applicable',
          field: 'challengeId',
        });
        expect(answer.status).to.equal(422);
      }
      const accepted = (await api.store.readStream(deviceStreamName(deviceId))).filter(
        (e) => e.type === 'CommandAccepted',
      );
      expect(accepted).to.have.length(0);
    });

    it('without commands:high_risk: 403 without reasons, before the gate (even for a missing device)', async () => {
      const deviceId = await armed();
      const lowRisk = await tenant.token(['commands:write']);
      for (const target of [deviceId, 'dev_nowhere']) {
        const answer = await post(target, contactorOn, { bearer: lowRisk });
        expect(answer.status).to.equal(403);
        expect(answer.body).to.deep.equal({ error: 'forbidden' });
      }
    });

    it('without commands:high_risk: 403 without reasons before the idempotency key, even one already accepted', async () => {
      const [deviceId, otherDevice] = [await armed(), await armed()];
      const challenge = challengeOf(await post(deviceId, contactorOn));
      const answered = { ...contactorOn, challengeId: challenge.challengeId };
      expect((await post(deviceId, answered, { key: 's3-kept' })).status).to.equal(201);
      const lowRisk = await tenant.token(['commands:write']);
      // The key is claimed: on its device it would replay the acceptance, on another one answer 409.
      for (const target of [deviceId, otherDevice]) {
        const answer = await post(target, answered, { key: 's3-kept', bearer: lowRisk });
        expect(answer.status).to.equal(403);
        expect(answer.body).to.deep.equal({ error: 'forbidden' });
      }
    });
  });

  describe('reading commands', () => {
    it('GET /v1/commands/{id}: the command; a foreign id answers like a missing one', async () => {
      const deviceId = await armed(['actuator.relay']);
      const { command } = (await post(deviceId, relayOn)).body as CommandBody;
      const read = await projected(`/v1/commands/${command.commandId}`, (a) => a.status === 200);
      expect((read.body as CommandBody).command).to.deep.include({
        commandId: command.commandId,
        status: 'queued',
      });
      const otherToken = await other.token();
      const foreign = await call(api, 'GET', `/v1/commands/${command.commandId}`, { token: otherToken });
      const missing = await call(api, 'GET', '/v1/commands/cmd_nowhere', { token: otherToken });
      expect(foreign.status).to.equal(404);
      expect(fingerprint(foreign)).to.deep.equal(fingerprint(missing));
    });

    it('GET /v1/devices/{id}/commands: status and time filters, keyset pages to the end', async () => {
      const deviceId = await armed(['actuator.relay']);
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        ids.push(
          ((await post(deviceId, { ...relayOn, mode: 'desired', value: i % 2 === 0 })).body as CommandBody)
            .command.commandId,
        );
      }
      await projected(
        `/v1/devices/${deviceId}/commands?status=superseded`,
        (a) => (a.body as { commands: unknown[] }).commands.length === 2,
      );
      const walked: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await call(
          api,
          'GET',
          `/v1/devices/${deviceId}/commands?limit=1${cursor ? `&cursor=${cursor}` : ''}`,
          { token },
        );
        expect(page.status, page.text).to.equal(200);
        const body = page.body as { commands: { commandId: string }[]; nextCursor?: string };
        walked.push(...body.commands.map((c) => c.commandId));
        cursor = body.nextCursor;
      } while (cursor);
      expect(walked).to.deep.equal(ids);
      const superseded = await call(api, 'GET', `/v1/devices/${deviceId}/commands?status=superseded`, {
        token,
      });
      expect(
        (superseded.body as { commands: { commandId: string }[] }).commands.map((c) => c.commandId),
      ).to.deep.equal(ids.slice(0, 2));
      const future = new Date(clock + 3_600_000).toISOString();
      const none = await call(api, 'GET', `/v1/devices/${deviceId}/commands?from=${future}`, { token });
      expect((none.body as { commands: unknown[] }).commands).to.deep.equal([]);
      const missing = await call(api, 'GET', '/v1/devices/dev_nowhere/commands', { token });
      expect(missing.status).to.equal(404);
    });
  });
});
