import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { CHAINED_EVENT_TYPES } from '../../src/domain/audit/chained-events.js';
import { eventDigest } from '../../src/domain/audit/chain.js';
import type { RecordedEvent } from '../../src/eventstore/port.js';
import { sha256Hex } from '../../src/infra/sha256.js';
import { auditChainProjector } from '../../src/projections/audit-chain/projector.js';
import { catchUpProjector } from '../../src/projections/catch-up.js';
import { installProjector, readCheckpoint } from '../../src/projections/checkpoints.js';
import { RebuildRefused } from '../../src/projections/projector.js';
import { rebuildProjector } from '../../src/projections/rebuild.js';
import { commitBatch } from '../../src/projections/runner.js';
import {
  appendProjectHistories,
  appendProjectHistory,
  expectedChain,
  projectChainUntil,
  storedLinks,
} from '../support/audit-chain.js';
import { devcloudLines } from '../support/devcloud.js';
import { eventStoreForEachTest, untilVisible } from '../support/event-store.js';

describe('audit chain projector', () => {
  const suite = eventStoreForEachTest({ idlePollMs: 50 });

  /** The chained events after `after`, with their data as stored, one page. */
  async function chainedPage(after?: string) {
    return suite.store.readAll({
      after,
      maxCount: 1000,
      eventTypes: CHAINED_EVENT_TYPES,
      dataAsStored: true,
    });
  }

  it('chains only the control history, per project, in global order, as the domain computes it (live runner)', async () => {
    // Two projects written concurrently, so their events interleave in the global order.
    const head = await appendProjectHistories(suite.store, ['prj_aaaaaaaa', 'prj_bbbbbbbb']);

    await projectChainUntil(suite.db, suite.store, head);

    const links = await storedLinks(suite.db.pool);
    expect(links).to.deep.equal(await expectedChain(suite.store));
    // Every chained event of each project (8 each), numbered 1.. per project, interleaved in position order.
    for (const project of ['prj_aaaaaaaa', 'prj_bbbbbbbb']) {
      expect(links.filter((l) => l.projectId === project).map((l) => l.sequence)).to.deep.equal([
        1, 2, 3, 4, 5, 6, 7, 8,
      ]);
    }
    expect(links.map((l) => l.position)).to.deep.equal([...links.map((l) => l.position)].sort());
    const switches = links.filter((l, i) => i > 0 && l.projectId !== links[i - 1]!.projectId).length;
    expect(switches, 'the two chains interleave in the global order').to.be.greaterThan(1);
    const types = new Map<string, string>();
    for (const e of (await suite.store.readAll({ maxCount: 1000 })).events) types.set(e.position, e.type);
    const chainedTypes = new Set(links.map((l) => types.get(l.position)));
    expect(chainedTypes).to.include.keys('DeviceLifecycleChanged', 'DeviceProfileVerified', 'CommandSent');
    for (const unchained of ['ReadingsRecorded', 'DeviceConnectivityChanged', 'AuditCheckpointSigned']) {
      expect(CHAINED_EVENT_TYPES).not.to.include(unchained);
      expect(chainedTypes).not.to.include.keys(unchained);
    }
    const { rows: heads } = await suite.db.pool.query<{ project_id: string; sequence: string; link: string }>(
      'SELECT project_id, sequence, link FROM audit_chain_heads ORDER BY project_id',
    );
    expect(heads.map((h) => [h.project_id, Number(h.sequence), h.link])).to.deep.equal(
      ['prj_aaaaaaaa', 'prj_bbbbbbbb'].map((p) => {
        const last = links.filter((l) => l.projectId === p).at(-1)!;
        return [p, last.sequence, last.link];
      }),
    );
  });

  it('chains the data as the store keeps it, also where that is not JSON.stringify of it (rows from jsonb days)', async () => {
    // As 0404 left an event appended when data was jsonb: jsonb's spelling, with spaces and its key order.
    const stored = '{"name": "Süd", "projectId": "prj_old00001"}';
    await suite.db.pool.query(
      `SELECT eventstore.append_events($1, -1, $2::uuid[], $3::text[], $4::json[], $5::json[])`,
      ['project-prj_old00001', [randomUUID()], ['ProjectCreated'], [stored], [null]],
    );
    const [event] = (await chainedPage()).events;
    expect(event!.dataText).to.equal(stored);
    expect(JSON.stringify(event!.data), 'the fault: the two spellings differ').not.to.equal(stored);

    // Through the live runner's subscription, which read parsed data only.
    await projectChainUntil(suite.db, suite.store, event!.position);
    const [link] = await storedLinks(suite.db.pool);
    const fields = { ...event!, streamName: event!.streamName, recordedAt: event!.recordedAt.toISOString() };
    expect(link!.digest).to.equal(eventDigest(sha256Hex, { ...fields, data: stored }));
    expect(link!.digest).not.to.equal(
      eventDigest(sha256Hex, { ...fields, data: JSON.stringify(event!.data) }),
    );
  });

  it('writes nothing twice when a batch killed before its commit is replayed', async () => {
    await appendProjectHistory(suite.store, 'prj_crash001');
    await untilVisible(suite.store, (await suite.store.headPosition())!);
    const projector = auditChainProjector();
    await installProjector(suite.db.pool, projector);
    const { events, lastPosition } = await chainedPage();
    expect(events.length).to.be.greaterThan(4);
    const first = events.slice(0, 3) as RecordedEvent[];

    // The batch's connection is terminated after its links were written, before its commit.
    let inFlight: { pid: number; links: number } | undefined;
    const killed = {
      ...projector,
      async apply(batch: readonly RecordedEvent[], db: Parameters<typeof projector.apply>[1]) {
        await projector.apply(batch, db);
        const { rows } = await db.query<{ pid: number; n: string }>(
          'SELECT pg_backend_pid() AS pid, (SELECT count(*) FROM audit_chain_links) AS n',
        );
        inFlight = { pid: rows[0]!.pid, links: Number(rows[0]!.n) };
        await suite.db.pool.query('SELECT pg_terminate_backend($1)', [inFlight.pid]);
        await db.query('SELECT 1');
      },
    };
    const error = await commitBatch(suite.db.pool, killed, undefined, first, first.at(-1)!.position).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error, 'the batch failed').to.be.instanceOf(Error);
    expect(inFlight?.links, 'its links were written inside the batch').to.equal(3);
    const { rows: alive } = await suite.db.pool.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [
      inFlight!.pid,
    ]);
    expect(alive, 'its connection is gone').to.have.length(0);
    expect(await storedLinks(suite.db.pool), 'nothing of it committed').to.deep.equal([]);
    expect((await readCheckpoint(suite.db.pool, projector.name))?.position).to.equal(undefined);

    // Replayed: each link once. The same batch offered again at its old checkpoint is refused whole.
    await catchUpProjector(suite.db.pool, suite.store, projector, 3);
    const links = await storedLinks(suite.db.pool);
    expect(links).to.deep.equal(await expectedChain(suite.store));
    expect(await commitBatch(suite.db.pool, projector, undefined, first, first.at(-1)!.position)).to.equal(
      false,
    );
    expect(await storedLinks(suite.db.pool)).to.deep.equal(links);
    expect((await readCheckpoint(suite.db.pool, projector.name))?.position).to.equal(lastPosition);
  });

  it('refuses a rebuild and leaves the chain as it was', async () => {
    await appendProjectHistory(suite.store, 'prj_keep0001');
    await catchUpProjector(suite.db.pool, suite.store, auditChainProjector());
    const before = await storedLinks(suite.db.pool);
    expect(before).to.have.length(8);
    const refusal = await rebuildProjector(suite.db.pool, suite.store, auditChainProjector(), {
      batchSize: 100,
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refusal).to.be.instanceOf(RebuildRefused);
    expect((refusal as Error).message).to.match(
      /^audit-chain is the record of what the events were .*evidence/,
    );
    expect(await storedLinks(suite.db.pool)).to.deep.equal(before);
  });

  it('`devcloud projections rebuild` without a name rebuilds the others and leaves the chain alone', async function () {
    this.timeout(180_000);
    await appendProjectHistory(suite.store, 'prj_cli00001');
    await catchUpProjector(suite.db.pool, suite.store, auditChainProjector());
    const links = await storedLinks(suite.db.pool);
    const checkpoint = await readCheckpoint(suite.db.pool, 'audit-chain');
    // The rows' writing transactions: a rebuild would have swapped in copies written by another.
    const { rows: marked } = await suite.db.pool.query<{ xmin: string }>(
      'SELECT xmin::text FROM audit_chain_links ORDER BY position',
    );

    const rebuild = await devcloudLines(['projections', 'rebuild', '--json'], suite.db.url, 500);
    expect(rebuild.code, rebuild.stderr).to.equal(0);
    const rebuilt = new Set(rebuild.lines.map((l) => (JSON.parse(l) as { projector: string }).projector));
    expect(rebuilt).to.include('audit');
    expect(rebuilt).not.to.include('audit-chain');
    expect(await storedLinks(suite.db.pool)).to.deep.equal(links);
    const { rows: after } = await suite.db.pool.query<{ xmin: string }>(
      'SELECT xmin::text FROM audit_chain_links ORDER BY position',
    );
    expect(after, 'the same rows, not copies').to.deep.equal(marked);
    expect(await readCheckpoint(suite.db.pool, 'audit-chain')).to.deep.equal(checkpoint);

    const named = await devcloudLines(['projections', 'rebuild', 'audit-chain', '--json'], suite.db.url, 500);
    expect(named.code).not.to.equal(0);
    expect(named.stderr).to.match(/audit-chain is the record of what the events were .*evidence/);
  });
});
