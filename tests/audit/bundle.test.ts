import { execFile } from 'node:child_process';
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { copyFile, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import { signCheckpoints } from '../../src/audit/checkpoints.js';
import { exportBundle } from '../../src/audit/export.js';
import {
  activeAuditSigner,
  auditKeyId,
  auditPublicKeys,
  rotateAuditKeys,
} from '../../src/audit/signing-keys.js';
import { checkpointDigest, eventDigest, nextLink } from '../../src/domain/audit/chain.js';
import { checkpointPayload, type AuditCheckpoint } from '../../src/domain/audit/checkpoint-events.js';
import { createClient, revokeClient } from '../../src/identity/clients.js';
import { createProject } from '../../src/identity/projects.js';
import { ClientSecretHasher } from '../../src/identity/secret-hash.js';
import { sha256Hex } from '../../src/infra/sha256.js';
import { auditChainProjector } from '../../src/projections/audit-chain/projector.js';
import { catchUpProjector } from '../../src/projections/catch-up.js';
import { createSite } from '../../src/registry/sites.js';
import { bundleLines } from '../support/audit-bundle.js';
import { eventStoreForSuite } from '../support/event-store.js';
import { tempDirectory } from '../support/run-directory.js';

interface Verdict {
  readonly code: number;
  readonly ok: boolean | undefined;
  readonly first: { kind: string; position: string } | undefined;
  readonly report: Record<string, unknown> | undefined;
  readonly stderr: string;
}

function run(file: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Verdict> {
  return new Promise((resolve) => {
    execFile(process.execPath, [file, ...args], { cwd, env, timeout: 60_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      const last = stdout.trim().split('\n').at(-1);
      let report: Record<string, unknown> | undefined;
      try {
        report = last ? (JSON.parse(last) as Record<string, unknown>) : undefined;
      } catch {
        report = undefined;
      }
      const findings = report?.findings as { kind: string; position: string }[] | undefined;
      const first = findings?.[0] && { kind: findings[0].kind, position: findings[0].position };
      resolve({ code, ok: report?.ok as boolean | undefined, first, report, stderr });
    });
  });
}

/**
 * The offline verifiers on exported bundles of real history: the service's `devcloud audit verify --bundle`
 * (with a database URL that leads nowhere, so it cannot have opened one) and the standalone verifier of
 * examples/audit-verifier, copied alone into a folder of its own. Both must accept an intact bundle and
 * refuse it after any single byte is changed, and agree on where history differs.
 */
describe('audit bundles verified offline', function () {
  this.timeout(240_000);
  const suite = eventStoreForSuite();
  let projectId: string;
  let lines: string[];
  let folder: string;
  let verifierFolder: string;
  let cases = 0;

  const chain = () => catchUpProjector(suite.db.pool, suite.store, auditChainProjector());
  const checkpoint = async (at: string) => {
    await chain();
    const signer = await activeAuditSigner(suite.db.pool);
    const signed = await signCheckpoints({
      store: suite.store,
      pool: suite.db.pool,
      signer,
      now: new Date(at),
    });
    expect(signed.map((s) => s.projectId)).to.include(projectId);
  };

  before(async () => {
    const hasher = new ClientSecretHasher(suite.db.pool);
    // Names with a two-byte and an astral-plane character: the chain hashes UTF-8 bytes, not UTF-16 units.
    projectId = (await createProject(suite.store, { name: 'Brasserie Zoë 🍺' })).projectId;
    const other = (await createProject(suite.store, { name: 'Other' })).projectId;
    await createClient(suite.store, hasher, { projectId, scopes: ['devices:read'] });
    await createClient(suite.store, hasher, { projectId: other, scopes: ['devices:read'] });
    await checkpoint('2030-01-01T00:00:00.000Z');
    await createSite(suite.store, { projectId, name: 'Dépôt ✓ 🏭', timezone: 'Europe/Paris' });
    const client = await createClient(suite.store, hasher, { projectId, scopes: ['commands:write'] });
    await checkpoint('2030-01-01T00:01:00.000Z');
    // The last checkpoints are signed by a key made by rotation: a bundle holds every key it needs.
    await rotateAuditKeys(suite.db.pool);
    await revokeClient(suite.store, client.clientId);
    await createSite(suite.store, { projectId, name: 'Annex', timezone: 'UTC' });
    await checkpoint('2030-01-01T00:02:00.000Z');
    // Chained but not yet signed: an export (and this bundle) ends at the last checkpoint.
    await createSite(suite.store, { projectId, name: 'Later', timezone: 'UTC' });
    await chain();

    // What `devcloud audit export` writes: the verifiers are held against the real exporter's output.
    lines = [];
    await exportBundle({ store: suite.store, pool: suite.db.pool }, { projectId }, (line) => {
      lines.push(line.replace(/\n$/, ''));
    });
    folder = await tempDirectory('audit-bundle');
    verifierFolder = await tempDirectory('audit-verifier');
    await copyFile(
      path.resolve('examples/audit-verifier/verify-bundle.mjs'),
      path.join(verifierFolder, 'verify-bundle.mjs'),
    );
  });

  /** Both verifiers on these bytes; they must agree on the exit code and on the first finding. */
  async function verifyBoth(bytes: Buffer | string, trustedKeys?: unknown): Promise<Verdict> {
    const name = `bundle-${++cases}.jsonl`;
    const file = path.join(folder, name);
    await writeFile(file, bytes);
    const keyArgs: string[] = [];
    if (trustedKeys !== undefined) {
      const keysFile = path.join(folder, `keys-${cases}.json`);
      await writeFile(keysFile, JSON.stringify(trustedKeys));
      keyArgs.push('--trusted-keys', keysFile);
    }
    const [service, standalone] = await Promise.all([
      run(
        path.resolve('bin/devcloud.js'),
        ['audit', 'verify', '--bundle', file, ...keyArgs, '--json'],
        process.cwd(),
        // A database that does not exist: the bundle mode must open none.
        { PATH: process.env.PATH, DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', DATA_DIR: folder },
      ),
      run('verify-bundle.mjs', [file, ...keyArgs, '--json'], verifierFolder, { PATH: process.env.PATH }),
    ]);
    expect(service.stderr, 'the service CLI prints no stack').not.to.match(/\n\s+at /);
    expect(standalone.stderr, 'the standalone verifier prints no stack').not.to.match(/\n\s+at /);
    expect(
      { code: standalone.code, first: standalone.first },
      `the verifiers disagree\nservice: ${JSON.stringify(service.report)}\nstandalone: ${JSON.stringify(standalone.report)}`,
    ).to.deep.equal({ code: service.code, first: service.first });
    return service;
  }

  const text = () => lines.join('\n') + '\n';
  const lineOf = (kind: string, nth = 0) =>
    lines.findIndex((l) => JSON.parse(l).kind === kind && nth-- === 0);

  /** The bundle with the byte at `offset` of line `index` (its UTF-8 bytes) replaced; the change is proven. */
  function withByte(index: number, offset: number, replacement?: number): Buffer {
    const original = Buffer.from(text(), 'utf8');
    const start = Buffer.byteLength(lines.slice(0, index).join('\n') + (index > 0 ? '\n' : ''), 'utf8');
    const changed = Buffer.from(original);
    const at = start + offset;
    changed[at] = replacement ?? nextChar(original[at]!);
    expect(changed[at], 'the byte really changed').not.to.equal(original[at]);
    expect([...changed].filter((b, i) => b !== original[i])).to.have.length(1);
    return changed;
  }

  /** Offset (bytes, in the line) of the n-th character of the value of `"key":"` in line `index`. */
  function offsetIn(index: number, key: string, nth = 0): number {
    const line = lines[index]!;
    const at = line.indexOf(`"${key}":`);
    expect(at, `${key} in line ${index}`).to.be.greaterThan(-1);
    const valueStart = at + key.length + 3 + (line[at + key.length + 3] === '"' ? 1 : 0);
    return Buffer.byteLength(line.slice(0, valueStart + nth), 'utf8');
  }

  it('an intact bundle verifies with both, and they report the fingerprints of the keys that signed it', async () => {
    const verdict = await verifyBoth(text());
    expect(verdict.code, verdict.stderr).to.equal(0);
    expect(verdict.report).to.include({ ok: true, projectId, events: 6, checkpoints: 3 });
    const keys = await auditPublicKeys(suite.db.pool);
    expect(keys).to.have.length(2);
    const fingerprints = keys.map((k) =>
      createHash('sha256')
        .update(Buffer.from(k.publicKey.replace(/-----[^-]+-----/g, '').replace(/\s/g, ''), 'base64'))
        .digest('hex'),
    );
    expect(verdict.report!.keys).to.deep.equal([
      { keyId: keys[0]!.keyId, fingerprint: fingerprints[0], source: 'bundle', checkpoints: 2 },
      { keyId: keys[1]!.keyId, fingerprint: fingerprints[1], source: 'bundle', checkpoints: 1 },
    ]);
    expect(fingerprints[0]!.slice(0, 32)).to.equal(keys[0]!.keyId);
  });

  it('verifies with the keys the auditor recorded, and refuses keys that did not sign it', async () => {
    const recorded = keyFile(await auditPublicKeys(suite.db.pool));
    const trusted = await verifyBoth(text(), recorded);
    expect(trusted.code, trusted.stderr).to.equal(0);
    expect((trusted.report!.keys as { source: string }[]).map((k) => k.source)).to.deep.equal([
      'trusted',
      'trusted',
    ]);

    const foreign = generateKeyPairSync('ed25519').publicKey;
    const stranger = keyFile([
      {
        keyId: auditKeyId(foreign),
        algorithm: 'Ed25519',
        publicKey: foreign.export({ type: 'spki', format: 'pem' }).toString(),
        createdAt: '2030-01-01T00:00:00.000Z',
        retiredAt: null,
      },
    ]);
    const refused = await verifyBoth(text(), stranger);
    expect(refused.code).to.equal(1);
    expect(refused.first).to.deep.equal({
      kind: 'checkpoint_unknown_key',
      position: JSON.parse(lines[lineOf('checkpoint')]!).eventPosition,
    });
  });

  it('a history rewritten and re-signed with a planted key passes on its own keys, not on the recorded ones', async () => {
    const forged = forge(lines, 2);
    const alone = await verifyBoth(forged.join('\n') + '\n');
    expect(alone.code, 'a consistent forgery is consistent').to.equal(0);
    const recorded = await verifyBoth(
      forged.join('\n') + '\n',
      keyFile(await auditPublicKeys(suite.db.pool)),
    );
    expect(recorded.code).to.equal(1);
    expect(recorded.first!.kind).to.equal('checkpoint_unknown_key');
  });

  it('a bundle taken up after a checkpoint (as with --from) verifies from its start', async () => {
    const later = await bundleLines({ store: suite.store, pool: suite.db.pool }, projectId, {
      afterCheckpoint: 0,
    });
    expect(JSON.parse(later[0]!).start.count).to.be.greaterThan(0);
    const verdict = await verifyBoth(later.join('\n') + '\n');
    expect(verdict.code, verdict.stderr).to.equal(0);
    expect(verdict.report).to.include({ ok: true, checkpoints: 2 });
  });

  describe('one byte changed', () => {
    const event = (nth: number) => lineOf('event', nth);
    const positionOf = (index: number) => JSON.parse(lines[index]!).position as string;
    const cases: [string, () => Buffer, (verdict: Verdict) => void][] = [
      [
        "in an event's data",
        () => withByte(event(1), offsetIn(event(1), 'data', 3)),
        (v) => expect(v.first).to.deep.equal({ kind: 'event_changed', position: positionOf(event(1)) }),
      ],
      [
        "in a non-ASCII character of an event's data (a byte of a multi-byte UTF-8 sequence)",
        () => {
          const index = lines.findIndex((l) => l.includes('Dépôt'));
          return withByte(
            index,
            Buffer.byteLength(lines[index]!.slice(0, lines[index]!.indexOf('é')), 'utf8') + 1,
          );
        },
        (v) => expect(v.first!.kind).to.equal('event_changed'),
      ],
      [
        "in an event's type",
        () => withByte(event(2), offsetIn(event(2), 'type', 2)),
        (v) => expect(v.first).to.deep.equal({ kind: 'event_changed', position: positionOf(event(2)) }),
      ],
      [
        "in an event's position",
        () => withByte(event(4), offsetIn(event(4), 'position', 31)),
        (v) => expect(v.first!.kind).to.equal('event_changed'),
      ],
      [
        "in an event's recorded time",
        () => withByte(event(0), offsetIn(event(0), 'recordedAt', 21)),
        (v) => expect(v.first).to.deep.equal({ kind: 'event_changed', position: positionOf(event(0)) }),
      ],
      [
        "in an event's stream",
        () => withByte(event(5), offsetIn(event(5), 'stream', 1)),
        (v) => expect(v.first).to.deep.equal({ kind: 'event_changed', position: positionOf(event(5)) }),
      ],
      [
        "in an event's digest",
        () => withByte(event(3), offsetIn(event(3), 'digest', 10)),
        (v) => expect(v.first).to.deep.equal({ kind: 'event_changed', position: positionOf(event(3)) }),
      ],
      [
        "in an event's link",
        () => withByte(event(5), offsetIn(event(5), 'link', 63)),
        (v) => expect(v.first).to.deep.equal({ kind: 'chain_differs', position: positionOf(event(5)) }),
      ],
      [
        "in an event's sequence",
        () => withByte(event(2), offsetIn(event(2), 'sequence'), 0x39),
        (v) => expect(v.first).to.deep.equal({ kind: 'event_removed', position: positionOf(event(2)) }),
      ],
      [
        "in a checkpoint's head",
        () => withByte(lineOf('checkpoint', 1), offsetIn(lineOf('checkpoint', 1), 'head', 5)),
        (v) => expect(v.first!.kind).to.equal('checkpoint_bad_signature'),
      ],
      [
        "in a checkpoint's signature",
        () => withByte(lineOf('checkpoint', 2), offsetIn(lineOf('checkpoint', 2), 'signature', 20)),
        (v) => expect(v.first!.kind).to.equal('checkpoint_bad_signature'),
      ],
      [
        "in the last character of the last checkpoint's signature (its unused bits)",
        () => {
          const index = lineOf('checkpoint', 2);
          const signature = (JSON.parse(lines[index]!) as { checkpoint: AuditCheckpoint }).checkpoint
            .signature;
          const last = signature.at(-1)!;
          // 64 bytes in base64url: the last digit carries 4 bits and 2 unused ones; flip an unused one.
          const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
          const twin = alphabet[alphabet.indexOf(last) ^ 1]!;
          expect(Buffer.from(signature.slice(0, -1) + twin, 'base64url')).to.deep.equal(
            Buffer.from(signature, 'base64url'),
          );
          return withByte(index, offsetIn(index, 'signature', signature.length - 1), twin.charCodeAt(0));
        },
        (v) => expect(v.first!.kind).to.equal('checkpoint_bad_signature'),
      ],
      [
        "in a key's public key",
        () => withByte(lineOf('key', 1), offsetIn(lineOf('key', 1), 'publicKey', 60)),
        (v) => expect(v.first!.kind).to.be.oneOf(['checkpoint_unknown_key', 'bundle_malformed']),
      ],
      [
        "in a key's id",
        () => withByte(lineOf('key', 0), offsetIn(lineOf('key', 0), 'keyId', 0)),
        (v) => expect(v.first!.kind).to.equal('checkpoint_unknown_key'),
      ],
      [
        'in the JSON syntax of a line',
        () => withByte(event(1), 0, 0x5b),
        (v) => expect(v.first).to.deep.equal({ kind: 'bundle_malformed', position: `line ${event(1) + 1}` }),
      ],
      [
        "in the header's format",
        () => withByte(0, offsetIn(0, 'format', 20)),
        (v) => expect(v.first).to.deep.equal({ kind: 'bundle_malformed', position: 'line 1' }),
      ],
      [
        "in the header's start link",
        () => withByte(0, offsetIn(0, 'link', 0)),
        (v) => expect(v.first).to.deep.equal({ kind: 'bundle_malformed', position: 'line 1' }),
      ],
      [
        "in a line's kind",
        () => withByte(event(0), offsetIn(event(0), 'kind', 0)),
        (v) => expect(v.first).to.deep.equal({ kind: 'bundle_malformed', position: `line ${event(0) + 1}` }),
      ],
    ];
    for (const [where, change, expectation] of cases) {
      it(`${where}: both verifiers refuse the bundle`, async () => {
        const verdict = await verifyBoth(change());
        expect(verdict.code, verdict.stderr).to.equal(1);
        expect(verdict.ok).to.equal(false);
        expectation(verdict);
      });
    }
  });

  it('the standalone verifier imports nothing but node: modules', async () => {
    const source = await readFile('examples/audit-verifier/verify-bundle.mjs', 'utf8');
    const imported = [...source.matchAll(/^import .* from '([^']+)';$/gm)].map((m) => m[1]);
    expect(imported).to.have.length.greaterThan(2);
    expect(imported.filter((specifier) => !specifier!.startsWith('node:'))).to.deep.equal([]);
    expect(source).not.to.match(/\bimport\(|require\(/);
  });

  it('a bundle file that is not there: one line on stderr and a non-zero exit from both, no stack', async () => {
    const missing = path.join(folder, 'no-such-bundle.jsonl');
    const [service, standalone] = await Promise.all([
      run(path.resolve('bin/devcloud.js'), ['audit', 'verify', '--bundle', missing], process.cwd(), {
        PATH: process.env.PATH,
      }),
      run('verify-bundle.mjs', [missing], verifierFolder, { PATH: process.env.PATH }),
    ]);
    expect([service.code, service.stderr.trim().split('\n')]).to.deep.equal([
      1,
      [`devcloud: audit verify: --bundle ${missing}: no such file`],
    ]);
    expect(standalone.code, 'could not run').to.equal(2);
    expect(standalone.stderr.trim().split('\n')).to.have.length(1);
  });

  describe('lines removed or moved', () => {
    it('without its header: refused, naming line 1', async () => {
      const verdict = await verifyBoth(lines.slice(1).join('\n') + '\n');
      expect([verdict.code, verdict.first]).to.deep.equal([
        1,
        { kind: 'bundle_malformed', position: 'line 1' },
      ]);
    });

    it('an empty file: refused, naming line 1', async () => {
      const verdict = await verifyBoth('');
      expect([verdict.code, verdict.first]).to.deep.equal([
        1,
        { kind: 'bundle_malformed', position: 'line 1' },
      ]);
    });

    it('without its last checkpoint: the events it covered are unsigned', async () => {
      const last = lineOf('checkpoint', 2);
      const previous = JSON.parse(lines[lineOf('checkpoint', 1)]!).checkpoint as AuditCheckpoint;
      const firstUnsigned = lines
        .map((l) => JSON.parse(l))
        .find((l) => l.kind === 'event' && l.sequence === previous.count + 1);
      const verdict = await verifyBoth(lines.filter((_, i) => i !== last).join('\n') + '\n');
      expect([verdict.code, verdict.first]).to.deep.equal([
        1,
        { kind: 'checkpoint_missing', position: firstUnsigned.position },
      ]);
    });

    it('without a checkpoint in the middle: the next one does not follow', async () => {
      const middle = lineOf('checkpoint', 1);
      const next = JSON.parse(lines[lineOf('checkpoint', 2)]!).eventPosition;
      const verdict = await verifyBoth(lines.filter((_, i) => i !== middle).join('\n') + '\n');
      expect([verdict.code, verdict.first]).to.deep.equal([
        1,
        { kind: 'checkpoint_missing', position: next },
      ]);
    });

    it('without an event: named at the event after it', async () => {
      const removed = lineOf('event', 2);
      const verdict = await verifyBoth(lines.filter((_, i) => i !== removed).join('\n') + '\n');
      expect([verdict.code, verdict.first]).to.deep.equal([
        1,
        { kind: 'event_removed', position: JSON.parse(lines[removed + 1]!).position },
      ]);
    });

    it('two events swapped: named at the first of them', async () => {
      const a = lineOf('event', 3);
      const swapped = [...lines];
      [swapped[a], swapped[a + 1]] = [swapped[a + 1]!, swapped[a]!];
      const verdict = await verifyBoth(swapped.join('\n') + '\n');
      expect([verdict.code, verdict.first]).to.deep.equal([
        1,
        { kind: 'event_removed', position: JSON.parse(lines[a + 1]!).position },
      ]);
    });

    it('a key line after the events: refused, naming the line', async () => {
      const key = lineOf('key', 0);
      const moved = [...lines.filter((_, i) => i !== key), lines[key]!];
      const verdict = await verifyBoth(moved.join('\n') + '\n');
      expect([verdict.code, verdict.first]).to.deep.equal([
        1,
        { kind: 'bundle_malformed', position: `line ${moved.length}` },
      ]);
    });
  });
});

/** The key file `devcloud audit keys export` writes, as an auditor keeps it. */
function keyFile(keys: readonly object[]) {
  return { format: 'devcloud-audit-keys/1', keys };
}

/** Another character of the same class, so the line stays JSON and a hex digit stays a hex digit. */
function nextChar(byte: number): number {
  const cycles: [number, number][] = [
    [0x30, 0x39], // 0-9
    [0x61, 0x66], // a-f
    [0x67, 0x7a], // g-z
    [0x41, 0x5a], // A-Z
  ];
  for (const [low, high] of cycles) if (byte >= low && byte <= high) return byte === high ? low : byte + 1;
  return byte ^ 1;
}

/**
 * The bundle with event `nth`'s data changed and everything after it made consistent again: digests, links,
 * heads, and checkpoints re-signed (with `previous` recomputed) by a key of the forger's, which replaces the
 * bundle's keys. Only keys recorded outside the system tell it apart.
 */
function forge(lines: readonly string[], nth: number): string[] {
  const pair = generateKeyPairSync('ed25519');
  const keyId = auditKeyId(pair.publicKey);
  const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  const header = parsed[0] as { start: { link: string } };
  let link = header.start.link;
  const heads = new Map<number, { link: string; position: string }>();
  let seen = 0;
  const events = parsed.filter((l) => l.kind === 'event') as unknown as {
    sequence: number;
    position: string;
    type: string;
    stream: string;
    recordedAt: string;
    data: string;
    digest: string;
    link: string;
  }[];
  for (const e of events) {
    if (seen++ === nth) e.data = e.data.replace('"name":"', '"name":"Forged ');
    e.digest = eventDigest(sha256Hex, { ...e, streamName: e.stream });
    e.link = link = nextLink(sha256Hex, link, e.digest);
    heads.set(e.sequence, { link, position: e.position });
  }
  expect(events[nth]!.data).to.include('Forged');
  let previous: string | null = null;
  for (const line of parsed.filter((l) => l.kind === 'checkpoint')) {
    const c = line.checkpoint as AuditCheckpoint;
    const terms = { ...c, head: heads.get(c.count)!.link, previous, keyId };
    const signature = sign(null, Buffer.from(checkpointPayload(terms), 'utf8'), pair.privateKey).toString(
      'base64url',
    );
    line.checkpoint = { ...terms, signature };
    previous = checkpointDigest(sha256Hex, checkpointPayload(terms), signature);
  }
  const key = {
    kind: 'key',
    keyId,
    algorithm: 'Ed25519',
    publicKey: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    createdAt: '2030-01-01T00:00:00.000Z',
    retiredAt: null,
  };
  return [parsed[0], key, ...parsed.filter((l) => l.kind === 'event' || l.kind === 'checkpoint')].map((l) =>
    JSON.stringify(l),
  );
}
