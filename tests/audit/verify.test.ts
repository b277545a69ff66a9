import { randomUUID, generateKeyPairSync, sign } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { auditKeyId } from '../../src/audit/signing-keys.js';
import { CHAINED_EVENT_TYPES } from '../../src/domain/audit/chained-events.js';
import { checkpointPayload, type AuditCheckpoint } from '../../src/domain/audit/checkpoint-events.js';
import { encodePgPosition } from '../../src/eventstore/postgres/position.js';
import {
  chainAndSign,
  signedControlHistory,
  storedEvents,
  type StoredEvent,
} from '../support/audit-history.js';
import { devcloud, type Run } from '../support/devcloud.js';
import { eventStoreForEachTest } from '../support/event-store.js';

/**
 * `devcloud audit verify` against history that was altered in the database after it was chained and signed.
 * The tamperer writes as the database's owner, outside the service: plain UPDATE, DELETE and INSERT on
 * eventstore.events (its one trigger refuses only the read-model writers' connections, which are not
 * this attacker). Each test proves its change is in the table before asking the CLI.
 */
describe('devcloud audit verify: tampered history on the PostgreSQL store', function () {
  this.timeout(180_000);
  const running = eventStoreForEachTest();
  let projectId: string;
  let otherProjectId: string;
  let events: StoredEvent[];

  beforeEach(async () => {
    ({ projectId, otherProjectId } = await signedControlHistory(running));
    events = await storedEvents(running, projectId);
    expect(events.length, 'chained events of the project').to.be.greaterThan(8);
  });

  const verify = (...args: string[]) => devcloud(running, 'audit', 'verify', ...args);
  const query = <R extends Record<string, unknown>>(sql: string, values: unknown[] = []) =>
    running.db.pool.query<R>(sql, values).then((r) => r.rows);
  const dataOf = async (eventId: string) =>
    (
      await query<{ data: string }>('SELECT data::text AS data FROM eventstore.events WHERE event_id = $1', [
        eventId,
      ])
    )[0]?.data;
  const failsAt = (run: Run, kind: string, position: string) => {
    expect(run.code, run.stdout + run.stderr).to.not.equal(0);
    expect(run.stderr).to.contain(kind);
    expect(run.stderr).to.contain(`in project ${projectId} at position ${position}`);
  };
  const byType = (type: string) => {
    const found = events.find((e) => e.type === type);
    expect(found, type).to.not.equal(undefined);
    return found!;
  };
  const checkpoints = async () =>
    query<{ event_id: string; data: string; transaction_id: string; global_position: string }>(
      `SELECT event_id, data::text AS data, transaction_id::text, global_position FROM eventstore.events
        WHERE event_type = 'AuditCheckpointSigned' AND data->>'projectId' = $1 ORDER BY transaction_id, global_position`,
      [projectId],
    );

  it('verifies an untouched store: exit 0, every chained event, every checkpoint', async () => {
    const { rows } = await running.db.pool.query<{ chained: string; links: string }>(
      `SELECT (SELECT count(*) FROM eventstore.events WHERE event_type = ANY ($1::text[])) AS chained,
              (SELECT count(*) FROM audit_chain_links) AS links`,
      [CHAINED_EVENT_TYPES],
    );
    // A device's lifecycle and profile moves name no project: they are chained in its registration's.
    expect(events.map((e) => e.type)).to.include.members(['DeviceProfileVerified', 'DeviceLifecycleChanged']);
    expect(Number(rows[0]!.links)).to.equal(Number(rows[0]!.chained));
    const run = await verify('--json');
    expect(run.code, run.stderr).to.equal(0);
    const report = JSON.parse(run.stdout) as {
      ok: boolean;
      events: number;
      checkpoints: number;
      projects: {
        projectId: string;
        events: number;
        unsigned: number;
        lastCheckpoint: { sequence: number };
      }[];
    };
    expect(report.ok).to.equal(true);
    expect(report.events).to.equal(Number(rows[0]!.links));
    expect(report.checkpoints).to.equal(4);
    const mine = report.projects.find((p) => p.projectId === projectId)!;
    expect(mine).to.include({ events: events.length, unsigned: 0 });
    expect(mine.lastCheckpoint.sequence).to.equal(1);
    const human = await verify('--project', projectId);
    expect(human.code, human.stderr).to.equal(0);
    expect(human.stdout).to.contain(`verified: ${events.length} events, 2 checkpoints matched, 0 findings`);
  });

  it('--threads N verifies N stretches of the history at once, with the same report', async () => {
    const onePass = await verify('--json');
    const inThree = await verify('--json', '--threads', '3');
    expect(inThree.code, inThree.stderr).to.equal(0);
    const { threads: one, ...reportOfOne } = JSON.parse(onePass.stdout) as Record<string, unknown>;
    const { threads: three, ...reportOfThree } = JSON.parse(inThree.stdout) as Record<string, unknown>;
    expect([one, three]).to.deep.equal([1, 3]);
    expect(reportOfThree).to.deep.equal(reportOfOne);
    const refusals = await Promise.all(['0', '1.5', 'two', '33'].map((n) => verify('--threads', n)));
    for (const refused of refusals) {
      expect(refused.code).to.not.equal(0);
      expect(refused.stderr).to.contain('--threads must be a whole number from 1 to 32');
    }
  });

  it('names the position of an event whose data was changed', async () => {
    const granted = byType('CapabilityWriteGranted');
    const forged = granted.data.replace('"binary.switch"', '"actuator.relay"');
    expect(forged).to.not.equal(granted.data);
    await query('UPDATE eventstore.events SET data = $1::json WHERE event_id = $2', [
      forged,
      granted.eventId,
    ]);
    expect(await dataOf(granted.eventId)).to.equal(forged);
    failsAt(await verify(), 'event_changed', granted.position);
  });

  it('names the position of an event that was deleted', async () => {
    const accepted = byType('CommandAccepted');
    await query('DELETE FROM eventstore.events WHERE event_id = $1', [accepted.eventId]);
    expect(await dataOf(accepted.eventId)).to.equal(undefined);
    failsAt(await verify(), 'event_removed', accepted.position);
  });

  it('names the position of an event inserted between two chained ones', async () => {
    // After the last event of some transaction, before the next chained event: a free (transaction, number).
    const index = events.findIndex(
      (e, i) => i > 2 && events[i + 1] !== undefined && events[i + 1]!.transactionId !== e.transactionId,
    );
    const before = events[index]!;
    const [last] = await query<{ n: string }>(
      'SELECT max(global_position)::text AS n FROM eventstore.events WHERE transaction_id = $1::xid8',
      [before.transactionId],
    );
    const globalPosition = String(BigInt(last!.n) + 1n);
    const position = encodePgPosition(before.transactionId, globalPosition);
    expect(position > before.position && position < events[index + 1]!.position).to.equal(true);
    const granted = JSON.parse(byType('CapabilityWriteGranted').data) as Record<string, unknown>;
    await query(
      `INSERT INTO eventstore.events (transaction_id, global_position, stream_name, stream_revision, event_id,
                                      event_type, data, recorded_at)
       OVERRIDING SYSTEM VALUE
       VALUES ($1::xid8, $2, $3, 0, $4, 'CapabilityWriteGranted', $5::json, $6)`,
      [
        before.transactionId,
        globalPosition,
        `device-forged-${randomUUID()}`,
        randomUUID(),
        JSON.stringify({ ...granted, capability: 'actuator.relay' }),
        before.recordedAt,
      ],
    );
    const inserted = await query<{ n: string }>(
      'SELECT count(*) AS n FROM eventstore.events WHERE transaction_id = $1::xid8 AND global_position = $2',
      [before.transactionId, globalPosition],
    );
    expect(inserted[0]!.n).to.equal('1');
    failsAt(await verify(), 'event_inserted', position);
  });

  it('names the first position of two events whose data was swapped', async () => {
    const [first, second] = events.filter((e) => e.type === 'CapabilityWriteGranted');
    expect(second, 'two grants').to.not.equal(undefined);
    await query(
      `UPDATE eventstore.events SET data = CASE event_id WHEN $1::uuid THEN $4::json ELSE $3::json END
        WHERE event_id IN ($1::uuid, $2::uuid)`,
      [first!.eventId, second!.eventId, first!.data, second!.data],
    );
    expect(await dataOf(first!.eventId)).to.equal(second!.data);
    expect(await dataOf(second!.eventId)).to.equal(first!.data);
    failsAt(await verify(), 'event_changed', first!.position);
  });

  it('names the position of a checkpoint whose head was altered', async () => {
    const [checkpoint] = await checkpoints();
    const data = JSON.parse(checkpoint!.data) as AuditCheckpoint;
    const altered = { ...data, head: data.head.replace(/^./, (c) => (c === '0' ? '1' : '0')) };
    await query('UPDATE eventstore.events SET data = $1::json WHERE event_id = $2', [
      JSON.stringify(altered),
      checkpoint!.event_id,
    ]);
    expect((JSON.parse((await dataOf(checkpoint!.event_id))!) as AuditCheckpoint).head).to.equal(
      altered.head,
    );
    failsAt(
      await verify(),
      'checkpoint_bad_signature',
      encodePgPosition(checkpoint!.transaction_id, checkpoint!.global_position),
    );
  });

  describe('a checkpoint signed by a foreign key', () => {
    let directory: string;
    beforeEach(async () => {
      directory = await mkdtemp(path.join(os.tmpdir(), 'audit-keys-'));
    });
    afterEach(async () => {
      await rm(directory, { recursive: true, force: true });
    });

    it('is refused, and a key planted in the database is refused under --trusted-keys', async () => {
      const keys = path.join(directory, 'keys.json');
      const exported = await devcloud(running, 'audit', 'keys', 'export', '--out', keys);
      expect(exported.code, exported.stderr).to.equal(0);

      const [, checkpoint] = await checkpoints();
      const data = JSON.parse(checkpoint!.data) as AuditCheckpoint;
      const foreign = generateKeyPairSync('ed25519');
      const keyId = auditKeyId(foreign.publicKey);
      const { signature: _, algorithm: __, ...terms } = { ...data, keyId };
      const resigned: AuditCheckpoint = {
        ...terms,
        algorithm: 'Ed25519',
        signature: sign(null, Buffer.from(checkpointPayload(terms)), foreign.privateKey).toString(
          'base64url',
        ),
      };
      await query('UPDATE eventstore.events SET data = $1::json WHERE event_id = $2', [
        JSON.stringify(resigned),
        checkpoint!.event_id,
      ]);
      expect((JSON.parse((await dataOf(checkpoint!.event_id))!) as AuditCheckpoint).keyId).to.equal(keyId);
      const position = encodePgPosition(checkpoint!.transaction_id, checkpoint!.global_position);
      failsAt(await verify(), 'checkpoint_unknown_key', position);

      // The attacker who can write the database plants their key beside the real ones: trusting the
      // database's keys, verification passes; trusting the keys the auditor recorded, it does not.
      await query(
        `INSERT INTO audit.signing_keys (key_id, algorithm, public_key, retired_at) VALUES ($1, 'Ed25519', $2, now())`,
        [keyId, foreign.publicKey.export({ type: 'spki', format: 'pem' }).toString()],
      );
      expect(await query('SELECT 1 FROM audit.signing_keys WHERE key_id = $1', [keyId])).to.have.length(1);
      const trusting = await verify();
      expect(trusting.code, trusting.stderr).to.equal(0);
      failsAt(await verify('--trusted-keys', keys), 'checkpoint_unknown_key', position);
    });
  });

  it('chains the bytes the store keeps, also those of an event stored in jsonb rendering (before 0404)', async () => {
    const legacy = `{"at": "2026-01-01T00:00:04.000Z", "deviceId": "dev_legacy", "projectId": "${projectId}", "capability": "binary.switch"}`;
    const eventId = randomUUID();
    await query(
      `INSERT INTO eventstore.events (stream_name, stream_revision, event_id, event_type, data)
       VALUES ('device-dev_legacy', 0, $1, 'CapabilityWriteGranted', $2::json)`,
      [eventId, legacy],
    );
    expect(await dataOf(eventId)).to.equal(legacy);
    await chainAndSign(running);
    const run = await verify('--project', projectId);
    expect(run.code, run.stderr).to.equal(0);
    expect(run.stdout).to.contain(`verified: ${events.length + 1} events, 3 checkpoints matched, 0 findings`);
  });

  it('--project leaves out what was changed in another project', async () => {
    const theirs = (await storedEvents(running, otherProjectId)).find((e) => e.type === 'CommandAccepted')!;
    await query('DELETE FROM eventstore.events WHERE event_id = $1', [theirs.eventId]);
    expect(await dataOf(theirs.eventId)).to.equal(undefined);
    const mine = await verify('--project', projectId);
    expect(mine.code, mine.stderr).to.equal(0);
    const all = await verify();
    expect(all.code).to.not.equal(0);
    expect(all.stderr).to.contain(
      `event_removed in project ${otherProjectId} at position ${theirs.position}`,
    );
  });
});
