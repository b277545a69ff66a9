import { expect } from 'chai';
import { createClient } from '../../src/identity/clients.js';
import { createProject } from '../../src/identity/projects.js';
import { ClientSecretHasher } from '../../src/identity/secret-hash.js';
import { auditProjector } from '../../src/projections/audit/projector.js';
import { catchUpProjector } from '../../src/projections/catch-up.js';
import { readCheckpoint } from '../../src/projections/checkpoints.js';
import { runProjector } from '../../src/projections/runner.js';
import { createLogger } from '../../src/infra/logger.js';
import { eventStoreForEachTest } from '../support/event-store.js';

describe('audit log', () => {
  const suite = eventStoreForEachTest({ idlePollMs: 50 });

  it('keeps every control-plane fact but never a client secret hash', async () => {
    const { projectId } = await createProject(suite.store, { name: 'Acme' });
    const client = await createClient(suite.store, new ClientSecretHasher(suite.db.pool), {
      projectId,
      scopes: ['devices:read'],
    });
    await catchUpProjector(suite.db.pool, suite.store, auditProjector(), 2000, client.position);
    const { rows } = await suite.db.pool.query<{ event_type: string; data: Record<string, unknown> }>(
      `SELECT event_type, data FROM audit_log ORDER BY position`,
    );
    expect(rows.map((r) => r.event_type)).to.deep.equal(['ProjectCreated', 'ClientCreated']);
    expect(rows[1]!.data).to.include({ clientId: client.clientId, secretHash: '[redacted]' });
    expect(JSON.stringify(rows)).not.to.match(/hmac-sha256|scrypt/);
  });

  it('copies each event’s position, id, stream, revision, type, time and metadata as the store holds them', async () => {
    const stream = 'Grant-audit-columns';
    await suite.store.append(
      stream,
      [{ id: crypto.randomUUID(), type: 'ProjectCreated', data: { n: 0 } }],
      'any',
    );
    const { position } = await suite.store.append(
      stream,
      [
        {
          id: crypto.randomUUID(),
          type: 'ProjectCreated',
          data: { n: 1, text: 'caf\u00e9 "quoted"' },
          metadata: { correlationId: 'c-1', nested: { a: [1, 2] } },
        },
      ],
      'any',
    );
    await catchUpProjector(suite.db.pool, suite.store, auditProjector(['ProjectCreated']), 2000, position);
    const stored = (await suite.store.readAll({ maxCount: 10, eventTypes: ['ProjectCreated'] })).events;
    expect(stored, 'both events are in the store').to.have.length(2);
    const { rows } = await suite.db.pool.query<{
      position: string;
      event_id: string;
      stream_name: string;
      stream_revision: string;
      event_type: string;
      recorded_at: Date;
      data: unknown;
      metadata: unknown;
    }>(`SELECT * FROM audit_log ORDER BY position`);
    expect(rows.map((r) => ({ ...r, recorded_at: r.recorded_at.getTime() }))).to.deep.equal(
      stored.map((e) => ({
        position: e.position,
        event_id: e.id,
        stream_name: e.streamName,
        stream_revision: String(e.revision),
        event_type: e.type,
        recorded_at: e.recordedAt.getTime(),
        data: e.data,
        metadata: e.metadata,
      })),
    );
    expect(rows.map((r) => r.stream_revision)).to.deep.equal(['0', '1']);
  });

  it('a log written by the version that copied hashes is rebuilt without them', async () => {
    const { projectId } = await createProject(suite.store, { name: 'Acme' });
    const client = await createClient(suite.store, new ClientSecretHasher(suite.db.pool), {
      projectId,
      scopes: ['devices:read'],
    });
    // What version 1 left behind: the hash copied into the log, and its checkpoint at the head.
    const projector = auditProjector();
    await catchUpProjector(suite.db.pool, suite.store, projector, 2000, client.position);
    await suite.db.pool.query(
      `UPDATE audit_log SET data = data || jsonb_build_object('secretHash', '$scrypt$ln=15,r=8,p=1$c2FsdA$aGFzaA')
        WHERE event_type = 'ClientCreated'`,
    );
    await suite.db.pool.query(`UPDATE projection.checkpoints SET version = 1 WHERE projector = 'audit'`);
    const leaked = async () =>
      (await suite.db.pool.query(`SELECT 1 FROM audit_log WHERE data::text LIKE '%scrypt%'`)).rowCount;
    expect(await leaked()).to.equal(1);

    const stop = new AbortController();
    const running = runProjector(suite.db.pool, suite.store, projector, {
      batchSize: 100,
      locks: suite.db.locks,
      signal: stop.signal,
      logger: createLogger('silent'),
    });
    try {
      const deadline = Date.now() + 20_000;
      while ((await readCheckpoint(suite.db.pool, 'audit'))!.version !== projector.version) {
        if (Date.now() > deadline) throw new Error('no rebuild within 20 s');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      stop.abort();
      await running;
    }
    expect(await leaked()).to.equal(0);
    expect((await suite.db.pool.query('SELECT 1 FROM audit_log')).rowCount).to.equal(2);
  });
});
