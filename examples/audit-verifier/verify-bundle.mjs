#!/usr/bin/env node
// Verifies a Device Cloud audit bundle (`devcloud audit export`) with Node.js alone: an implementation of the
// format in docs/audit.md written apart from the service's code, so an auditor can read it whole and trust
// neither the service nor its CLI. Usage: node verify-bundle.mjs BUNDLE [--trusted-keys KEYS] [--json]
// Exit 0: every checkpoint matches the history. Exit 1: it does not, or the bundle is not of the format.
// Exit 2: the program could not run (usage, unreadable file).
import { Buffer } from 'node:buffer';
import { createHash, createPublicKey, verify } from 'node:crypto';
import { createReadStream, readFileSync, statSync } from 'node:fs';
import process from 'node:process';
import { createInterface } from 'node:readline';

const BUNDLE_FORMAT = 'devcloud-audit-bundle/1';
const CHAIN_FORMAT = 'devcloud-audit-chain/1';
const CHECKPOINT_FORMAT = 'devcloud-audit-checkpoint/1';

// ---- The chain: SHA-256 (lowercase hex) over fields written as `<UTF-8 byte length>:<text>`.
const sha256 = (text) => createHash('sha256').update(text, 'utf8').digest('hex');
const field = (text) => `${Buffer.byteLength(text, 'utf8')}:${text}`;
const genesisLink = (projectId) => sha256(field(CHAIN_FORMAT) + field('genesis') + field(projectId));
const eventDigest = (e) =>
  sha256(field(e.position) + field(e.type) + field(e.stream) + field(e.recordedAt) + field(e.data));
const nextLink = (previous, digest) => sha256(field(CHAIN_FORMAT) + field(previous) + field(digest));

// ---- A checkpoint signs this JSON array; the next checkpoint names this one by its digest.
const signedText = (c) =>
  JSON.stringify([
    CHECKPOINT_FORMAT,
    c.projectId,
    c.sequence,
    c.count,
    c.position,
    c.head,
    c.previous,
    c.signedAt,
    c.keyId,
  ]);
const checkpointDigest = (c) => sha256(field(CHECKPOINT_FORMAT) + field(signedText(c)) + field(c.signature));

// ---- The shape of each line: exactly these fields, each passing its check.
const text = (v) => typeof v === 'string';
const nonEmpty = (v) => text(v) && v.length > 0;
const hex64 = (v) => text(v) && /^[0-9a-f]{64}$/.test(v);
const count = (v) => Number.isSafeInteger(v) && v >= 0;
const positive = (v) => Number.isSafeInteger(v) && v > 0;
const is = (expected) => (v) => v === expected;
const orNull = (check) => (v) => v === null || check(v);
const object = (shape) => (v) => problemWith(v, shape) === undefined;

const START = { count, link: hex64, position: orNull(nonEmpty) };
const HEADER = {
  format: is(BUNDLE_FORMAT),
  chainFormat: is(CHAIN_FORMAT),
  projectId: nonEmpty,
  exportedAt: text,
  from: orNull(text),
  to: orNull(text),
  start: object(START),
};
const CHECKPOINT = {
  projectId: text,
  sequence: count,
  count: positive,
  position: text,
  head: hex64,
  previous: orNull(hex64),
  signedAt: text,
  keyId: text,
  algorithm: is('Ed25519'),
  signature: text,
};
const LINES = {
  key: {
    kind: is('key'),
    keyId: text,
    algorithm: is('Ed25519'),
    publicKey: text,
    createdAt: text,
    retiredAt: orNull(text),
  },
  event: {
    kind: is('event'),
    sequence: positive,
    position: nonEmpty,
    type: text,
    stream: text,
    recordedAt: text,
    data: text,
    digest: hex64,
    link: hex64,
  },
  checkpoint: { kind: is('checkpoint'), eventPosition: text, checkpoint: object(CHECKPOINT) },
};
const ORDER = Object.keys(LINES);

/** The first field of `value` that does not fit `shape` (or is not in it), or undefined. */
function problemWith(value, shape) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return '(line)';
  const extra = Object.keys(value).find((name) => !Object.hasOwn(shape, name));
  if (extra !== undefined) return extra;
  return Object.keys(shape).find((name) => !Object.hasOwn(value, name) || !shape[name](value[name]));
}

/** A failed verification: what was found and the first position (or bundle line) where history differs. */
class Finding extends Error {
  constructor(kind, position, message) {
    super(message);
    this.kind = kind;
    this.position = position;
  }
}

function keyObject(pem) {
  try {
    const key = createPublicKey(pem);
    return key.asymmetricKeyType === 'ed25519' ? key : undefined;
  } catch {
    return undefined;
  }
}

const fingerprint = (key) =>
  createHash('sha256')
    .update(key.export({ type: 'spki', format: 'der' }))
    .digest('hex');

/** Reads the bundle's lines into header, keys, events and checkpoints, refusing any line not of the format. */
async function readBundle(lines) {
  const bundle = { header: undefined, keys: [], events: [], checkpoints: [] };
  let number = 0;
  let section = 0;
  const malformed = (why) =>
    new Finding('bundle_malformed', `line ${number}`, `line ${number} of the bundle ${why}`);
  for await (const line of lines) {
    number++;
    let value;
    try {
      value = JSON.parse(line);
    } catch {
      throw malformed('is not JSON');
    }
    if (!bundle.header) {
      const wrong = problemWith(value, HEADER);
      if (wrong !== undefined) throw malformed(`is not a ${BUNDLE_FORMAT} header: ${wrong}`);
      const { projectId, start } = value;
      if (start.count === 0 && (start.position !== null || start.link !== genesisLink(projectId))) {
        throw malformed(`starts before any event but not at the genesis of project ${projectId}`);
      }
      if (start.count > 0 && start.position === null)
        throw malformed('starts after events but names no position');
      bundle.header = value;
      continue;
    }
    const at = ORDER.indexOf(value?.kind);
    if (at < 0) throw malformed(`has an unknown kind ${JSON.stringify(value?.kind)}`);
    if (at < section) throw malformed(`is a ${value.kind} after the ${ORDER[section]} lines`);
    section = at;
    const wrong = problemWith(value, LINES[value.kind]);
    if (wrong !== undefined) throw malformed(`is not a ${value.kind} line: ${wrong}`);
    if (value.kind === 'key') {
      if (!keyObject(value.publicKey)) throw malformed(`holds no readable public key for ${value.keyId}`);
      bundle.keys.push(value);
    } else if (value.kind === 'event') bundle.events.push(value);
    else if (value.checkpoint.projectId !== bundle.header.projectId) {
      throw malformed(`holds a checkpoint of project ${value.checkpoint.projectId}`);
    } else bundle.checkpoints.push(value);
  }
  if (!bundle.header) {
    number = 1;
    throw malformed('is missing: the bundle has no header');
  }
  return bundle;
}

/** The checks, in order; throws the first Finding. Answers the keys used and how many checkpoints matched. */
function verifyBundle({ header, keys, events, checkpoints }, trustedKeys) {
  const { projectId, start } = header;
  // A key counts only when its id is the first 32 hex digits of its fingerprint.
  const byId = new Map();
  for (const key of trustedKeys ?? keys) {
    const publicKey = keyObject(key.publicKey);
    const sum = publicKey && fingerprint(publicKey);
    if (sum?.slice(0, 32) === key.keyId) byId.set(key.keyId, { publicKey, fingerprint: sum, checkpoints: 0 });
  }
  // 1. Every checkpoint is signed by a known key and follows the one before it (none removed).
  const signed = checkpoints.map((line) => ({ at: line.eventPosition, ...line.checkpoint }));
  signed.sort((a, b) => a.sequence - b.sequence);
  let before;
  for (const c of signed) {
    const key = byId.get(c.keyId);
    if (!key)
      throw new Finding(
        'checkpoint_unknown_key',
        c.at,
        `checkpoint #${c.sequence}: key ${c.keyId} is not trusted`,
      );
    const signature = Buffer.from(c.signature, 'base64url');
    const canonical = signature.toString('base64url') === c.signature;
    if (!canonical || !verify(null, Buffer.from(signedText(c), 'utf8'), key.publicKey, signature)) {
      throw new Finding(
        'checkpoint_bad_signature',
        c.at,
        `checkpoint #${c.sequence}: the signature does not hold`,
      );
    }
    const follows = before
      ? c.sequence === before.sequence + 1 && c.previous === checkpointDigest(before)
      : c.sequence === 0
        ? c.previous === null
        : start.count > 0;
    if (!follows)
      throw new Finding(
        'checkpoint_missing',
        c.at,
        `checkpoint #${c.sequence} does not follow the one before`,
      );
    before = c;
  }
  // 2. The chain computed again from `start`, each event against its line, each head against its checkpoint.
  const pending = signed.filter((c) => c.count > start.count).sort((a, b) => a.count - b.count);
  let n = start.count;
  let link = start.count === 0 ? genesisLink(projectId) : start.link;
  let last = start.position ?? undefined;
  let verified = start.count;
  let firstUnverified;
  let matched = 0;
  for (const e of events) {
    const owner = projectOf(e.data);
    if (owner !== undefined && owner !== projectId) {
      throw new Finding(
        'event_changed',
        e.position,
        `the event at ${e.position} belongs to project ${owner}`,
      );
    }
    const digest = eventDigest(e);
    if (digest !== e.digest)
      throw new Finding('event_changed', e.position, `the event at ${e.position} differs from its digest`);
    if (e.sequence > n + 1)
      throw new Finding('event_removed', e.position, `events before ${e.position} were removed`);
    const next = nextLink(link, digest);
    if (e.sequence < n + 1 || e.link !== next) {
      throw new Finding(
        'chain_differs',
        e.position,
        `the history before ${e.position} differs from the chain`,
      );
    }
    if (n === verified) firstUnverified = e.position;
    n++;
    link = next;
    last = e.position;
    while (pending[0] && pending[0].count <= n) {
      const c = pending.shift();
      if (c.count < n) continue;
      if (c.position !== last || c.head !== link) {
        throw new Finding(
          'checkpoint_mismatch',
          firstUnverified,
          `history differs from checkpoint #${c.sequence} from ${firstUnverified} on`,
        );
      }
      matched++;
      verified = n;
    }
  }
  // 3. Nothing signed is missing, and nothing unsigned was added: a bundle ends at a checkpoint.
  if (pending[0]) {
    throw new Finding(
      'checkpoint_beyond_history',
      last ?? pending[0].position,
      `checkpoint #${pending[0].sequence} covers events the bundle lacks`,
    );
  }
  if (n > verified) {
    const first = events[events.length - (n - verified)].position;
    throw new Finding(
      'checkpoint_missing',
      first,
      `the events from ${first} on are covered by no checkpoint`,
    );
  }
  for (const c of signed) byId.get(c.keyId).checkpoints++;
  const used = [...byId].filter(([, k]) => k.checkpoints > 0);
  return {
    events: n - start.count,
    checkpoints: matched,
    keys: used.map(([keyId, k]) => ({ keyId, fingerprint: k.fingerprint, checkpoints: k.checkpoints })),
  };
}

function projectOf(data) {
  try {
    const projectId = JSON.parse(data)?.projectId;
    return typeof projectId === 'string' ? projectId : undefined;
  } catch {
    return undefined; // not JSON any more: the digest shows the change
  }
}

function readTrustedKeys(file) {
  const { format, keys } = JSON.parse(readFileSync(file, 'utf8')) ?? {};
  const known = format === undefined || format === 'devcloud-audit-keys/1';
  if (!known || !Array.isArray(keys) || !keys.every((k) => text(k?.keyId) && keyObject(k?.publicKey))) {
    throw new Error(
      `${file} is not a list of audit public keys ({"keys": [...]}, as audit keys export writes)`,
    );
  }
  return keys;
}

async function main(args) {
  const json = args.includes('--json');
  const at = args.indexOf('--trusted-keys');
  const keysFile = at >= 0 ? args[at + 1] : undefined;
  const rest = args.filter((a, i) => a !== '--json' && i !== at && (at < 0 || i !== at + 1));
  if (rest.length !== 1 || rest[0].startsWith('-') || (at >= 0 && keysFile === undefined)) {
    process.stderr.write('usage: node verify-bundle.mjs BUNDLE [--trusted-keys KEYS] [--json]\n');
    return 2;
  }
  let trustedKeys;
  try {
    trustedKeys = keysFile === undefined ? undefined : readTrustedKeys(keysFile);
    if (!statSync(rest[0]).isFile()) throw new Error(`${rest[0]} is not a file`);
  } catch (error) {
    process.stderr.write(`verify-bundle: ${error.message}\n`);
    return 2;
  }
  const say = (report, lines) =>
    process.stdout.write(json ? JSON.stringify(report) + '\n' : lines.join('\n') + '\n');
  try {
    const bundle = await readBundle(
      createInterface({ input: createReadStream(rest[0]), crlfDelay: Infinity }),
    );
    const result = verifyBundle(bundle, trustedKeys);
    say({ ok: true, projectId: bundle.header.projectId, ...result, findings: [] }, [
      `bundle of project ${bundle.header.projectId}: ${result.events} events, ${result.checkpoints} checkpoints matched`,
      ...result.keys.map(
        (k) => `key ${k.keyId} sha256 ${k.fingerprint}: signed ${k.checkpoints} checkpoints`,
      ),
      'verified: every checkpoint matches the history',
    ]);
    return 0;
  } catch (error) {
    if (!(error instanceof Finding)) throw error;
    const finding = { kind: error.kind, position: error.position, message: error.message };
    say({ ok: false, findings: [finding] }, [
      `${finding.kind} at ${finding.position}: ${finding.message}`,
      'NOT verified',
    ]);
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
