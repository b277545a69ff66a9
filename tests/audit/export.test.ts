import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { verifyStoredHistory } from '../../src/audit/verify.js';
import { genesisLink } from '../../src/domain/audit/chain.js';
import { sha256Hex } from '../../src/infra/sha256.js';
import { chainAndSign, signedControlHistory, storedEvents } from '../support/audit-history.js';
import { controls } from '../support/commands.js';
import { devcloud } from '../support/devcloud.js';
import { eventStoreForSuite } from '../support/event-store.js';

type Line = Record<string, unknown>;
const lines = (text: string) =>
  text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Line);

describe('devcloud audit export, head, keys and --checkpoints on the PostgreSQL store', function () {
  this.timeout(240_000);
  const running = eventStoreForSuite();
  let directory: string;
  let projectId: string;
  let d1: string;

  before(async () => {
    ({ projectId, d1 } = await signedControlHistory(running));
    directory = await mkdtemp(path.join(os.tmpdir(), 'audit-export-'));
  });
  after(async () => {
    await rm(directory, { recursive: true, force: true });
  });
  const cli = (...args: string[]) => devcloud(running, ...args);

  it("exports a project's signed history as the bundle format, ending at its last checkpoint", async () => {
    // An event after the last checkpoint: chained, not signed, so not exported.
    await controls(running.store, { projectId }).grant(d1, 'actuator.relay', false);
    const events = await storedEvents(running, projectId);
    const file = path.join(directory, 'bundle.jsonl');
    const run = await cli('audit', 'export', '--project', projectId, '--out', file, '--json');
    expect(run.code, run.stderr).to.equal(0);
    const bundle = lines(await readFile(file, 'utf8'));
    const [header, ...rest] = bundle;
    expect(header).to.deep.include({
      format: 'devcloud-audit-bundle/1',
      chainFormat: 'devcloud-audit-chain/1',
      projectId,
      from: null,
      to: null,
      start: { count: 0, link: genesisLink(sha256Hex, projectId), position: null },
    });
    const keys = rest.filter((l) => l.kind === 'key');
    const exported = rest.filter((l) => l.kind === 'event');
    const checkpoints = rest.filter((l) => l.kind === 'checkpoint');
    expect(rest.map((l) => l.kind)).to.deep.equal([
      ...keys.map(() => 'key'),
      ...exported.map(() => 'event'),
      ...checkpoints.map(() => 'checkpoint'),
    ]);
    expect(keys).to.have.length(1);
    expect(checkpoints.map((c) => (c.checkpoint as { sequence: number }).sequence)).to.deep.equal([0, 1]);
    // Every signed event, in chain order, with its data exactly as stored; the unsigned one left out.
    expect(exported).to.have.length(events.length - 1);
    expect(exported.map((e) => [e.sequence, e.position, e.data])).to.deep.equal(
      events.slice(0, -1).map((e, i) => [i + 1, e.position, e.data]),
    );
    expect(JSON.parse(run.stdout)).to.deep.include({ events: events.length - 1, checkpoints: 2, keys: 1 });
  });

  it('prints the newest checkpoint of each project, with its signature and key', async () => {
    // Two reads: their CLI runs, seconds of start-up each, go side by side.
    const [run, keyList] = await Promise.all([
      cli('audit', 'head', '--json'),
      cli('audit', 'keys', 'list', '--json'),
    ]);
    expect(run.code, run.stderr).to.equal(0);
    const heads = lines(run.stdout);
    expect(heads).to.have.length(2);
    const mine = heads.find((h) => h.projectId === projectId)!;
    expect(mine).to.include({ sequence: 1, algorithm: 'Ed25519' });
    expect(mine.signature).to.be.a('string').and.not.be.empty;
    const keys = lines(keyList.stdout);
    expect(keys.map((k) => k.keyId)).to.deep.equal([mine.keyId]);
  });

  it('prints beside each grant the checkpoint that covers it, or unsigned', async () => {
    // Two reads, side by side.
    const [run, table] = await Promise.all([
      cli('audit', 'grants', '--project', projectId, '--checkpoints', '--json'),
      cli('audit', 'commands', '--project', projectId, '--checkpoints'),
    ]);
    expect(run.code, run.stderr).to.equal(0);
    const rows = lines(run.stdout);
    const covered = rows.map((r) => r.checkpoint);
    // Two grants before checkpoint #0, a revoke before #1, and the revoke of the first test unsigned.
    expect(covered.slice(0, 2).map((c) => (c as { sequence: number }).sequence)).to.deep.equal([0, 0]);
    expect((covered[2] as { sequence: number }).sequence).to.equal(1);
    expect(covered.at(-1)).to.equal('unsigned');
    expect(table.code, table.stderr).to.equal(0);
    expect(table.stdout)
      .to.match(/CHECKPOINT/)
      .and.match(/#0 \d{4}-/);
  });

  it('verifies a window by recording time, taken up from the link before it', async () => {
    await chainAndSign(running);
    const events = await storedEvents(running, projectId);
    const from = new Date(events[5]!.recordedAt.getTime()).toISOString();
    const report = await verifyStoredHistory(
      { store: running.store, pool: running.db.pool },
      { projectId, from },
    );
    expect(report.findings).to.deep.equal([]);
    const counted = events.filter((e) => e.recordedAt.toISOString() >= from).length;
    expect(report.events).to.equal(counted).and.be.lessThan(events.length);
    const to = new Date(events.at(-2)!.recordedAt.getTime() + 1).toISOString();
    const bounded = await verifyStoredHistory(
      { store: running.store, pool: running.db.pool },
      { projectId, to },
    );
    expect(bounded.ok).to.equal(true);
    expect(bounded.events).to.equal(events.length - 1);
  });

  it('survives a rebuild of the read models, and refuses to rebuild the chain', async () => {
    const rebuild = await cli('projections', 'rebuild');
    expect(rebuild.code, rebuild.stderr).to.equal(0);
    const verified = await cli('audit', 'verify');
    expect(verified.code, verified.stderr).to.equal(0);
    const refused = await cli('projections', 'rebuild', 'audit-chain');
    expect(refused.code).to.not.equal(0);
    expect(refused.stderr).to.contain('audit-chain');
  });

  it('rotates the signing key: the old one is kept, retired, for the checkpoints it signed', async () => {
    const run = await cli('audit', 'keys', 'rotate', '--json');
    expect(run.code, run.stderr).to.equal(0);
    const rotation = JSON.parse(run.stdout) as { keyId: string; retired: string[] };
    expect(rotation.retired).to.have.length(1);
    const keys = lines((await cli('audit', 'keys', 'list', '--json')).stdout);
    expect(keys.map((k) => [k.keyId, k.retiredAt === null])).to.deep.equal([
      [rotation.retired[0], false],
      [rotation.keyId, true],
    ]);
    expect((await cli('audit', 'verify')).code).to.equal(0);
  });
});
