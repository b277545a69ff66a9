import { createHash } from 'node:crypto';
import { expect } from 'chai';
import {
  CHAIN_FORMAT,
  checkpointDigest,
  eventDigest,
  genesisLink,
  nextLink,
  type ChainedEvent,
} from '../../src/domain/audit/chain.js';
import {
  CHECKPOINT_FORMAT,
  checkpointPayload,
  type AuditCheckpoint,
} from '../../src/domain/audit/checkpoint-events.js';
import { joinSegments } from '../../src/domain/audit/segments.js';
import {
  HistoryVerification,
  verificationReport,
  type ChainSeed,
  type CheckSignature,
  type ObservedCheckpoint,
  type ObservedEvent,
  type StoredLink,
  type VerificationReport,
} from '../../src/domain/audit/verification.js';
import { sha256Hex } from '../../src/infra/sha256.js';

/** The documented encoding, written out again from docs/audit.md with bytes, not with the domain's code. */
function field(text: string): Buffer {
  const bytes = Buffer.from(text, 'utf8');
  return Buffer.concat([Buffer.from(`${bytes.length}:`, 'ascii'), bytes]);
}
const sha256Of = (...fields: string[]) =>
  createHash('sha256')
    .update(Buffer.concat(fields.map(field)))
    .digest('hex');

describe('audit chain format (chain.ts)', () => {
  // A two-byte (ë), a three-byte (✓) and an astral-plane (🍺, two UTF-16 units, four UTF-8 bytes) character.
  const event: ChainedEvent = {
    position: '0000000000000a2b000000000000002a',
    type: 'SiteCreated',
    streamName: 'site-site_1',
    recordedAt: '2030-01-01T00:00:00.000Z',
    data: '{"siteId":"site_1","projectId":"prj_1","name":"Zoë ✓ 🍺"}',
  };

  it('given a fixed event, its digest is SHA-256 over length-prefixed UTF-8 fields', () => {
    expect(Buffer.byteLength(event.data, 'utf8'), 'the data in UTF-8 bytes').to.equal(
      event.data.length + 1 + 2 + 2,
    );
    expect(field(event.data).toString('utf8')).to.match(/^62:/);
    const expected = sha256Of(event.position, event.type, event.streamName, event.recordedAt, event.data);
    expect(eventDigest(sha256Hex, event)).to.equal(expected);
    // Pinned: a change of the encoding is a change of the format (and of CHAIN_FORMAT), never silent.
    expect(expected).to.equal('0f55b63b1dc45bb61abd20d12021a2b4947ee163585476b7c16eb97a2848f03f');
  });

  it('given a project, the chain starts from the format, the word genesis and the project id', () => {
    expect(CHAIN_FORMAT).to.equal('devcloud-audit-chain/1');
    expect(genesisLink(sha256Hex, 'prj_1')).to.equal(sha256Of(CHAIN_FORMAT, 'genesis', 'prj_1'));
  });

  it('given the link before and a digest, the next link commits to the format, both and nothing else', () => {
    const genesis = genesisLink(sha256Hex, 'prj_1');
    const digest = eventDigest(sha256Hex, event);
    const link = nextLink(sha256Hex, genesis, digest);
    expect(link).to.equal(sha256Of(CHAIN_FORMAT, genesis, digest));
    expect(link).to.equal('3bb689e7fff7e858e03d0e9f3463ceaf3a9cc54004a17a1cf98b0afbc76e8d9c');
  });

  it('counts UTF-8 bytes as Node does, for every kind of character (a lone surrogate is encoded as U+FFFD)', () => {
    const texts = [
      '',
      'a',
      'é',
      '€',
      '🍺',
      'a🍺b',
      '\ud800',
      '\udc00x',
      'x\ud83c',
      '\u0000',
      '"\\\n',
      '日本語',
    ];
    for (const text of texts) {
      const chained = { ...event, data: text };
      expect(eventDigest(sha256Hex, chained), JSON.stringify(text)).to.equal(
        sha256Of(event.position, event.type, event.streamName, event.recordedAt, text),
      );
    }
  });

  it('no two different events encode alike: moving text from one field to the next changes the digest', () => {
    const a = eventDigest(sha256Hex, { ...event, type: 'Site', streamName: 'Created' });
    const b = eventDigest(sha256Hex, { ...event, type: 'SiteCreated', streamName: '' });
    expect(a).not.to.equal(b);
  });

  it('a checkpoint is named by the digest of its format, payload and signature', () => {
    expect(checkpointDigest(sha256Hex, '["x"]', 'sig')).to.equal(sha256Of(CHECKPOINT_FORMAT, '["x"]', 'sig'));
  });

  it('a checkpoint signs a JSON array of its terms in a fixed order', () => {
    const payload = checkpointPayload({
      projectId: 'prj_1',
      sequence: 2,
      count: 7,
      position: 'p7',
      head: 'a'.repeat(64),
      previous: null,
      signedAt: '2030-01-01T00:00:00.000Z',
      keyId: 'k1',
    });
    expect(payload).to.equal(
      `["devcloud-audit-checkpoint/1","prj_1",2,7,"p7","${'a'.repeat(64)}",null,"2030-01-01T00:00:00.000Z","k1"]`,
    );
  });
});

// ---- HistoryVerification: a store's history, its chain and its checkpoints, then what is observed.

const P = 'prj_1';
const Q = 'prj_2';
const fakeSign = (payload: string) => `sig-${sha256Hex(`k1|${payload}`).slice(0, 24)}`;
/** A fake signature scheme: key k1 is known, its signature is a keyed hash of the payload. */
const checkSignature: CheckSignature = (keyId, payload, signature) =>
  keyId !== 'k1' ? 'unknown_key' : signature === fakeSign(payload) ? 'valid' : 'invalid';

const pos = (n: number) => `p${String(n).padStart(3, '0')}`;
const anEvent = (n: number, projectId = P): ObservedEvent => ({
  projectId,
  position: pos(n),
  type: 'SiteCreated',
  streamName: `site-${n}`,
  recordedAt: `2030-01-01T00:00:${String(n % 60).padStart(2, '0')}.000Z`,
  data: JSON.stringify({ projectId, n }),
});

/** The links the chain's projector would have written for these events (each project's from its genesis). */
function chained(events: readonly ObservedEvent[]): StoredLink[] {
  const heads = new Map<string, { count: number; link: string }>();
  return events.map((e) => {
    const head = heads.get(e.projectId) ?? { count: 0, link: genesisLink(sha256Hex, e.projectId) };
    const digest = eventDigest(sha256Hex, e);
    const next = { count: head.count + 1, link: nextLink(sha256Hex, head.link, digest) };
    heads.set(e.projectId, next);
    return { position: e.position, projectId: e.projectId, sequence: next.count, digest, link: next.link };
  });
}

/** Checkpoints of one project at these counts of its links, signed by `keyId`, each naming the one before. */
function checkpointsAt(
  links: readonly StoredLink[],
  counts: readonly number[],
  keyId = 'k1',
): ObservedCheckpoint[] {
  let previous: string | null = null;
  return counts.map((count, sequence) => {
    const link = links.filter((l) => l.projectId === links[0]!.projectId)[count - 1]!;
    const terms = {
      projectId: link.projectId,
      sequence,
      count,
      position: link.position,
      head: link.link,
      previous,
      signedAt: `2030-01-01T01:00:0${sequence}.000Z`,
      keyId,
    };
    const checkpoint: AuditCheckpoint = {
      ...terms,
      algorithm: 'Ed25519',
      signature: fakeSign(checkpointPayload(terms)),
    };
    previous = checkpointDigest(sha256Hex, checkpointPayload(terms), checkpoint.signature);
    return { eventPosition: `c-${link.projectId}-${sequence}`, checkpoint };
  });
}

/**
 * Given the chain (links) and the signed checkpoints, when the store holds `events`: the report, after
 * observing every position of either in global order, as the store's verification merges them.
 */
function verify(
  given: {
    links: readonly StoredLink[];
    checkpoints: readonly ObservedCheckpoint[];
    seeds?: Map<string, ChainSeed>;
  },
  events: readonly ObservedEvent[],
  options: { complete?: boolean; unchainedAfter?: string } = {},
): VerificationReport {
  return verificationReport(outcomeOf(given, events, options));
}

/** What `verify` reports, as the outcome that segments of one verification join. */
function outcomeOf(
  given: Parameters<typeof verify>[0],
  events: readonly ObservedEvent[],
  options: Parameters<typeof verify>[2] = {},
) {
  const verification = new HistoryVerification(sha256Hex, checkSignature, given.checkpoints, given.seeds);
  const positions = [
    ...new Set([...events.map((e) => e.position), ...given.links.map((l) => l.position)]),
  ].sort();
  for (const position of positions) {
    const unchained = options.unchainedAfter !== undefined && position > options.unchainedAfter;
    verification.observe(
      events.find((e) => e.position === position),
      given.links.find((l) => l.position === position),
      unchained,
    );
  }
  return verification.outcome(options.complete ?? true);
}

const firstFinding = (report: VerificationReport) => {
  expect(report.ok, 'verification fails').to.equal(false);
  const { kind, projectId, position } = report.findings[0]!;
  return { kind, projectId, position };
};

describe('history verification (verification.ts)', () => {
  const history = [1, 2, 3, 4, 5].map((n) => anEvent(n));
  const links = chained(history);
  const signed = { links, checkpoints: checkpointsAt(links, [2, 5]) };

  it('given an untouched history, when verified, then it holds and names its head and last checkpoint', () => {
    const report = verify(signed, history);
    expect(report.findings).to.deep.equal([]);
    expect(report).to.include({ ok: true, events: 5, checkpoints: 2 });
    expect(report.projects).to.deep.equal([
      {
        projectId: P,
        events: 5,
        head: links[4]!.link,
        lastCheckpoint: { sequence: 1, count: 5, position: pos(5), signedAt: '2030-01-01T01:00:01.000Z' },
        unsigned: 0,
      },
    ]);
  });

  it("given an event's data changed in the store, then the event is named as changed", () => {
    const changed = history.map((e, i) => (i === 2 ? { ...e, data: e.data.replace('3', '4') } : e));
    expect(firstFinding(verify(signed, changed))).to.deep.equal({
      kind: 'event_changed',
      projectId: P,
      position: pos(3),
    });
  });

  it('given an event moved to another project, then it is named as changed in the project it was chained in', () => {
    const moved = history.map((e, i) => (i === 1 ? { ...e, projectId: Q } : e));
    expect(firstFinding(verify(signed, moved))).to.deep.equal({
      kind: 'event_changed',
      projectId: P,
      position: pos(2),
    });
  });

  it('given an event removed from the store, then its position is named', () => {
    const removed = history.filter((_, i) => i !== 2);
    expect(firstFinding(verify(signed, removed))).to.deep.equal({
      kind: 'event_removed',
      projectId: P,
      position: pos(3),
    });
  });

  it('given an event removed with its link, then the next event is named: the chain counts one too many before it', () => {
    const given = { ...signed, links: links.filter((_, i) => i !== 2) };
    const report = verify(
      given,
      history.filter((_, i) => i !== 2),
    );
    expect(firstFinding(report)).to.deep.equal({ kind: 'event_removed', projectId: P, position: pos(4) });
  });

  it('given an event inserted that was never chained, then it is named as inserted', () => {
    const inserted = [...history.slice(0, 3), { ...anEvent(3), position: 'p003a' }, ...history.slice(3)];
    expect(firstFinding(verify(signed, inserted))).to.deep.equal({
      kind: 'event_inserted',
      projectId: P,
      position: 'p003a',
    });
  });

  it('given two events swapped in the store, then the first of the two positions is named', () => {
    const swapped = history.map((e, i) =>
      i === 2 ? { ...history[3]!, position: pos(3) } : i === 3 ? { ...history[2]!, position: pos(4) } : e,
    );
    expect(firstFinding(verify(signed, swapped))).to.deep.equal({
      kind: 'event_changed',
      projectId: P,
      position: pos(3),
    });
  });

  it('given a link rewritten while its event is intact, then the chain is named as differing there', () => {
    const given = { ...signed, links: links.map((l, i) => (i === 3 ? { ...l, link: 'f'.repeat(64) } : l)) };
    expect(firstFinding(verify(given, history))).to.deep.equal({
      kind: 'chain_differs',
      projectId: P,
      position: pos(4),
    });
  });

  it('given events and links rewritten together, then the checkpoint after them fails, naming the first event it covers anew', () => {
    const rewritten = history.map((e, i) => (i === 3 ? { ...e, data: e.data.replace('4', '9') } : e));
    const given = { ...signed, links: chained(rewritten) };
    const report = verify(given, rewritten);
    expect(firstFinding(report)).to.deep.equal({
      kind: 'checkpoint_mismatch',
      projectId: P,
      position: pos(3),
    });
    expect(report.findings[0]!.message).to.include('checkpoint #1');
  });

  it('given the last events removed with their links, then a checkpoint lies beyond the history', () => {
    const given = { ...signed, links: links.slice(0, 3) };
    const report = verify(given, history.slice(0, 3));
    expect(firstFinding(report)).to.deep.equal({
      kind: 'checkpoint_beyond_history',
      projectId: P,
      position: pos(3),
    });
    expect(
      verify(given, history.slice(0, 3), { complete: false }).ok,
      'a window up to --to ends early',
    ).to.equal(true);
  });

  it('given a checkpoint whose terms were altered, then its signature fails, at the checkpoint', () => {
    const altered = signed.checkpoints.map((c, i) =>
      i === 1 ? { ...c, checkpoint: { ...c.checkpoint, count: 4 } } : c,
    );
    expect(firstFinding(verify({ ...signed, checkpoints: altered }, history))).to.deep.equal({
      kind: 'checkpoint_bad_signature',
      projectId: P,
      position: `c-${P}-1`,
    });
  });

  it('given a checkpoint signed by a key that is not trusted, then it is named', () => {
    const foreign = checkpointsAt(links, [2, 5], 'k9');
    expect(firstFinding(verify({ ...signed, checkpoints: foreign }, history))).to.deep.equal({
      kind: 'checkpoint_unknown_key',
      projectId: P,
      position: `c-${P}-0`,
    });
  });

  it('given a checkpoint removed, then the one after it does not follow', () => {
    const three = checkpointsAt(links, [1, 3, 5]);
    expect(verify({ links, checkpoints: three }, history).ok).to.equal(true);
    expect(firstFinding(verify({ links, checkpoints: [three[0]!, three[2]!] }, history))).to.deep.equal({
      kind: 'checkpoint_missing',
      projectId: P,
      position: `c-${P}-2`,
    });
    expect(
      firstFinding(verify({ links, checkpoints: three.slice(1) }, history)),
      'the first removed',
    ).to.deep.equal({
      kind: 'checkpoint_missing',
      projectId: P,
      position: `c-${P}-1`,
    });
  });

  it('given a seed (verification --from a position), then the chain is taken up there', () => {
    const seeds = new Map([[P, { count: 2, link: links[1]!.link, position: pos(2) }]]);
    const later = signed.checkpoints.slice(1);
    const report = verify({ links: links.slice(2), checkpoints: later, seeds }, history.slice(2));
    expect(report.findings).to.deep.equal([]);
    expect(report.projects[0]).to.include({ events: 5, unsigned: 0 });

    const wrongSeed = new Map([[P, { count: 2, link: links[0]!.link, position: pos(2) }]]);
    expect(
      firstFinding(verify({ links: links.slice(2), checkpoints: later, seeds: wrongSeed }, history.slice(2))),
    ).to.deep.equal({ kind: 'chain_differs', projectId: P, position: pos(3) });
  });

  it('given events past the chain the projector has written (an unchained tail), then they hold, counted unsigned', () => {
    const tail = [...history, anEvent(6), anEvent(7)];
    const report = verify(signed, tail, { unchainedAfter: pos(5) });
    expect(report.findings).to.deep.equal([]);
    expect(report.projects[0]).to.include({ events: 7, unsigned: 2 });
    expect(firstFinding(verify(signed, tail)), 'within the chain they were inserted').to.deep.equal({
      kind: 'event_inserted',
      projectId: P,
      position: pos(6),
    });
  });

  it('given two projects interleaved, then a change in one leaves the other verified', () => {
    const mixed = [1, 2, 3, 4, 5, 6].map((n) => anEvent(n, n % 2 ? P : Q));
    const mixedLinks = chained(mixed);
    const checkpoints = [
      ...checkpointsAt(
        mixedLinks.filter((l) => l.projectId === P),
        [3],
      ),
      ...checkpointsAt(
        mixedLinks.filter((l) => l.projectId === Q),
        [3],
      ),
    ];
    expect(verify({ links: mixedLinks, checkpoints }, mixed).ok).to.equal(true);
    const changed = mixed.map((e) =>
      e.position === pos(4) ? { ...e, recordedAt: '2030-01-01T00:00:04.001Z' } : e,
    );
    const report = verify({ links: mixedLinks, checkpoints }, changed);
    expect(report.findings.map((f) => [f.kind, f.projectId, f.position])).to.deep.equal([
      ['event_changed', Q, pos(4)],
    ]);
    expect(report.projects.find((p) => p.projectId === P)).to.include({ events: 3, unsigned: 0 });
  });
});

describe('verification in segments (segments.ts)', () => {
  const history = [1, 2, 3, 4, 5, 6, 7].map((n) => anEvent(n, n === 4 ? Q : P));
  const links = chained(history);
  const checkpoints = [
    ...checkpointsAt(
      links.filter((l) => l.projectId === P),
      [2, 5],
    ),
    ...checkpointsAt(
      links.filter((l) => l.projectId === Q),
      [1],
    ),
  ];
  const signed = { links, checkpoints };
  const inRange = (position: string, from: number, before: number | undefined) =>
    position >= pos(from) && (before === undefined || position < pos(before));

  /** Each chain as the stored links before `cut` leave it, with the count its last checkpoint before signed. */
  function seedsBefore(cut: number): Map<string, ChainSeed> {
    const seeds = new Map<string, ChainSeed>();
    for (const link of links.filter((l) => l.position < pos(cut))) {
      const signedCounts = checkpoints
        .filter((c) => c.checkpoint.projectId === link.projectId && c.checkpoint.count <= link.sequence)
        .map((c) => c.checkpoint.count);
      const verified = Math.max(0, ...signedCounts);
      const firstUnverified = links.find(
        (l) => l.projectId === link.projectId && l.sequence === verified + 1,
      );
      seeds.set(link.projectId, {
        count: link.sequence,
        link: link.link,
        position: link.position,
        verified: {
          count: verified,
          firstUnverified: verified < link.sequence ? firstUnverified!.position : undefined,
        },
      });
    }
    return seeds;
  }

  /** The history cut before each of `cuts`, each segment verified alone, then joined. */
  function inSegments(events: readonly ObservedEvent[], cuts: readonly number[], seeds = seedsBefore) {
    const starts = [1, ...cuts];
    return verificationReport(
      joinSegments(
        starts.map((from, i) => {
          const before = cuts[i];
          const segmentSeeds = i === 0 ? new Map<string, ChainSeed>() : seeds(from);
          return {
            seeds: segmentSeeds,
            start: pos(from),
            outcome: outcomeOf(
              {
                links: links.filter((l) => inRange(l.position, from, before)),
                checkpoints,
                seeds: segmentSeeds,
              },
              events.filter((e) => inRange(e.position, from, before)),
              { complete: before === undefined },
            ),
          };
        }),
      ),
    );
  }

  const changedAt = (n: number) =>
    history.map((e) => (e.position === pos(n) ? { ...e, data: e.data.replace(String(n), 'x') } : e));
  const histories: [string, ObservedEvent[]][] = [
    ['untouched', history],
    ...[2, 3, 5, 6].map((n): [string, ObservedEvent[]] => [`changed at ${n}`, changedAt(n)]),
    ['without event 3', history.filter((e) => e.position !== pos(3))],
    ['without its last two events', history.slice(0, 5)],
  ];

  for (const [name, events] of histories) {
    it(`given a history ${name}, when cut anywhere and the segments joined, then the report is one pass's`, () => {
      const onePass = verify(signed, events);
      for (const cuts of [[2], [3], [4], [6], [2, 5], [3, 4, 6]]) {
        expect(inSegments(events, cuts), `cut before ${cuts.join(', ')}`).to.deep.equal(onePass);
      }
    });
  }

  it("given a seed that is not where the segment before left its chain, then the chain differs at the seed's position", () => {
    const forged = (cut: number) => {
      const seeds = seedsBefore(cut);
      seeds.set(P, { ...seeds.get(P)!, link: links[0]!.link });
      return seeds;
    };
    const report = inSegments(history, [4], forged);
    expect(report.findings.map((f) => [f.kind, f.projectId, f.position])).to.deep.equal([
      ['chain_differs', P, pos(3)],
    ]);
  });

  it('given a project that failed in an earlier segment, then what later segments found for it is left out', () => {
    const twice = changedAt(2).map((e) => (e.position === pos(6) ? { ...e, data: 'x' } : e));
    const report = inSegments(twice, [4]);
    expect(report.findings.map((f) => [f.kind, f.position])).to.deep.equal([['event_changed', pos(2)]]);
    expect(report).to.deep.equal(verify(signed, twice));
  });
});
