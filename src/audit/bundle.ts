import { createPublicKey } from 'node:crypto';
import { z } from 'zod';
import { CHAIN_FORMAT, genesisLink } from '../domain/audit/chain.js';
import { ChainMembership } from '../domain/audit/chained-events.js';
import { AuditCheckpointSigned } from '../domain/audit/checkpoint-events.js';
import {
  HistoryVerification,
  type ChainSeed,
  type Finding,
  type ObservedCheckpoint,
  type VerificationReport,
} from '../domain/audit/verification.js';
import { sha256Hex } from '../infra/sha256.js';
import { auditKeyFingerprint, signatureCheck, type AuditPublicKey } from './signing-keys.js';

/**
 * Offline verification of an exported bundle (docs/audit.md, "The export bundle"): the chain is computed
 * again from the bundle's `start`, each event held against its own digest and link line, the heads against
 * the signed checkpoints, the signatures against the bundle's keys or the auditor's own. No database, no
 * configuration: what the bundle says is all there is. A line that is not of the format is a finding that
 * names the line, never an exception.
 */
export const BUNDLE_FORMAT = 'devcloud-audit-bundle/1';

const hex64 = z.string().regex(/^[0-9a-f]{64}$/);

const headerLine = z.strictObject({
  format: z.literal(BUNDLE_FORMAT),
  chainFormat: z.literal(CHAIN_FORMAT),
  projectId: z.string().min(1),
  exportedAt: z.string(),
  from: z.string().nullable(),
  to: z.string().nullable(),
  start: z.strictObject({
    count: z.number().int().nonnegative(),
    link: hex64,
    position: z.string().min(1).nullable(),
  }),
});

const keyLine = z.strictObject({
  kind: z.literal('key'),
  keyId: z.string(),
  algorithm: z.literal('Ed25519'),
  publicKey: z.string(),
  createdAt: z.string(),
  retiredAt: z.string().nullable(),
});

const eventLine = z.strictObject({
  kind: z.literal('event'),
  sequence: z.number().int().positive(),
  position: z.string().min(1),
  type: z.string(),
  stream: z.string(),
  recordedAt: z.string(),
  data: z.string(),
  digest: hex64,
  link: hex64,
});

const checkpointLine = z.strictObject({
  kind: z.literal('checkpoint'),
  eventPosition: z.string(),
  checkpoint: z.strictObject(AuditCheckpointSigned.schema.shape),
});

/** The kinds of line after the header, in the order a bundle holds them. */
const SECTIONS = { key: keyLine, event: eventLine, checkpoint: checkpointLine } as const;
const ORDER = Object.keys(SECTIONS) as (keyof typeof SECTIONS)[];

type Header = z.infer<typeof headerLine>;
type EventLine = z.infer<typeof eventLine>;

interface Bundle {
  readonly header: Header;
  readonly keys: AuditPublicKey[];
  readonly events: EventLine[];
  readonly checkpoints: ObservedCheckpoint[];
}

/** A key that vouched for the bundle's checkpoints, and how the auditor can recognise it. */
interface BundleKey {
  readonly keyId: string;
  /** SHA-256 of the public key (SPKI, DER), hex: the key id is its first 32 digits. */
  readonly fingerprint: string;
  readonly source: 'bundle' | 'trusted';
  /** How many of the bundle's checkpoints name it. */
  readonly checkpoints: number;
}

export interface BundleReport extends VerificationReport {
  readonly projectId?: string;
  readonly keys: readonly BundleKey[];
}

/**
 * Verifies a bundle read line by line. `trustedKeys`: the audit public keys the auditor recorded; without
 * them the bundle's own keys are used (a key whose id is not its fingerprint is refused either way).
 */
export async function verifyBundle(
  lines: AsyncIterable<string>,
  options: { readonly trustedKeys?: readonly AuditPublicKey[] } = {},
): Promise<BundleReport> {
  const read = await readBundle(lines);
  if ('malformed' in read) {
    return { ok: false, findings: [read.malformed], events: 0, checkpoints: 0, projects: [], keys: [] };
  }
  const { header, events, checkpoints } = read;
  const { projectId, start } = header;
  const keys = options.trustedKeys ?? read.keys;
  const seeds = new Map<string, ChainSeed>();
  if (start.position !== null) seeds.set(projectId, { ...start, position: start.position });
  const verification = new HistoryVerification(sha256Hex, signatureCheck(keys), checkpoints, seeds);
  // Every event of a bundle is of its project; one whose data names another project was changed.
  const membership = new ChainMembership();
  for (const line of events) {
    verification.observe(
      {
        projectId: membership.projectOf(line.type, parsedData(line.data)) ?? projectId,
        position: line.position,
        type: line.type,
        streamName: line.stream,
        recordedAt: line.recordedAt,
        data: line.data,
      },
      { projectId, position: line.position, sequence: line.sequence, digest: line.digest, link: line.link },
    );
  }
  const report = verification.finish(true);
  const unsigned = report.projects.find((p) => p.projectId === projectId)?.unsigned ?? 0;
  const findings: Finding[] = [...report.findings];
  if (report.ok && unsigned > 0) {
    const first = events[events.length - unsigned]!.position;
    findings.push({
      kind: 'checkpoint_missing',
      projectId,
      position: first,
      message:
        `the bundle's last ${unsigned} events, from ${first} on, are covered by no checkpoint: a bundle ends ` +
        'at a checkpoint, so a checkpoint was removed or events were added',
    });
  }
  return {
    ...report,
    ok: findings.length === 0,
    findings,
    projectId,
    keys: keysUsed(keys, checkpoints, options.trustedKeys ? 'trusted' : 'bundle'),
  };
}

async function readBundle(lines: AsyncIterable<string>): Promise<Bundle | { malformed: Finding }> {
  let number = 0;
  let header: Header | undefined;
  let section = 0;
  const bundle = {
    keys: [] as AuditPublicKey[],
    events: [] as EventLine[],
    checkpoints: [] as ObservedCheckpoint[],
  };
  const malformed = (why: string) => ({
    malformed: {
      kind: 'bundle_malformed' as const,
      projectId: header?.projectId ?? '',
      position: `line ${number}`,
      message: `line ${number} of the bundle ${why}`,
    },
  });
  for await (const text of lines) {
    number++;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return malformed('is not JSON');
    }
    if (!header) {
      const parsed = headerLine.safeParse(value);
      if (!parsed.success) return malformed(`is not a ${BUNDLE_FORMAT} header: ${issue(parsed.error)}`);
      header = parsed.data;
      const why = startProblem(header);
      if (why) return malformed(why);
      continue;
    }
    const kind = (value as { kind?: unknown } | null)?.kind;
    const at = ORDER.indexOf(kind as keyof typeof SECTIONS);
    if (at < 0) return malformed(`has an unknown kind ${JSON.stringify(kind) ?? 'undefined'}`);
    if (at < section) return malformed(`is a ${String(kind)} after the ${ORDER[section]} lines`);
    section = at;
    const parsed = SECTIONS[ORDER[at]!].safeParse(value);
    if (!parsed.success) return malformed(`is not a ${String(kind)} line: ${issue(parsed.error)}`);
    const line = parsed.data;
    if (line.kind === 'key') {
      if (!isAuditPublicKey(line.publicKey))
        return malformed(`holds no readable public key for ${line.keyId}`);
      const { kind: _kind, ...key } = line;
      bundle.keys.push(key);
    } else if (line.kind === 'event') bundle.events.push(line);
    else if (line.checkpoint.projectId !== header.projectId) {
      return malformed(`holds a checkpoint of project ${line.checkpoint.projectId}, not ${header.projectId}`);
    } else bundle.checkpoints.push({ eventPosition: line.eventPosition, checkpoint: line.checkpoint });
  }
  if (!header) {
    number = 1;
    return malformed('is missing: the bundle has no header');
  }
  return { header, ...bundle };
}

/** Why the header's `start` cannot be where a chain is taken up, if it cannot. */
function startProblem({ projectId, start }: Header): string | undefined {
  if (start.count === 0) {
    if (start.position !== null) return 'starts before any event but names a position';
    if (start.link !== genesisLink(sha256Hex, projectId)) {
      return `starts before any event with a link that is not the genesis of project ${projectId}`;
    }
  } else if (start.position === null) return `starts after ${start.count} events but names no position`;
  return undefined;
}

function issue(error: z.ZodError): string {
  const first = error.issues[0];
  return first ? `${first.path.join('.') || '(line)'}: ${first.message}` : 'invalid';
}

/** Whether a PEM text holds an Ed25519 public key, the only kind audit keys are. */
function isAuditPublicKey(pem: string): boolean {
  try {
    return createPublicKey(pem).asymmetricKeyType === 'ed25519';
  } catch {
    return false;
  }
}

function parsedData(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    // Not JSON any more: the digest check names the event as changed.
    return undefined;
  }
}

function keysUsed(
  keys: readonly AuditPublicKey[],
  checkpoints: readonly ObservedCheckpoint[],
  source: BundleKey['source'],
): BundleKey[] {
  return keys.flatMap((key) => {
    const signed = checkpoints.filter((c) => c.checkpoint.keyId === key.keyId).length;
    if (signed === 0) return [];
    return [
      {
        keyId: key.keyId,
        fingerprint: auditKeyFingerprint(createPublicKey(key.publicKey)),
        source,
        checkpoints: signed,
      },
    ];
  });
}
