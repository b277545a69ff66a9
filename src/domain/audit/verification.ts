import {
  checkpointDigest,
  eventDigest,
  genesisLink,
  nextLink,
  type ChainedEvent,
  type Sha256Hex,
} from './chain.js';
import { checkpointPayload, type AuditCheckpoint } from './checkpoint-events.js';

/**
 * Verifying a project's history: the chain is computed again from the events the store (or a bundle) holds
 * and held against what was signed. The signed checkpoints give the verdict; the stored chain (one link an
 * event, kept beside the read models) names the exact position where the events stopped matching it.
 * Pure: the hash and the signature check come in as arguments, the events and links in global order.
 */

/** A chained event as read back, with the project whose chain it belongs to. */
export interface ObservedEvent extends ChainedEvent {
  readonly projectId: string;
}

/** One stored link: the `sequence`-th event (from 1) of the project's chain, at `position`. */
export interface StoredLink {
  readonly position: string;
  readonly projectId: string;
  readonly sequence: number;
  readonly digest: string;
  readonly link: string;
}

/** A checkpoint event as read back: where it was recorded and what it says. */
export interface ObservedCheckpoint {
  readonly eventPosition: string;
  readonly checkpoint: AuditCheckpoint;
}

type SignatureVerdict = 'valid' | 'invalid' | 'unknown_key';
export type CheckSignature = (keyId: string, payload: string, signature: string) => SignatureVerdict;

export type FindingKind =
  | 'event_changed'
  | 'event_removed'
  | 'event_inserted'
  | 'chain_differs'
  | 'checkpoint_mismatch'
  | 'checkpoint_beyond_history'
  | 'checkpoint_bad_signature'
  | 'checkpoint_unknown_key'
  | 'checkpoint_missing'
  /** An exported bundle's line that is not of the bundle's format (its position names the line). */
  | 'bundle_malformed';

export interface Finding {
  readonly kind: FindingKind;
  readonly projectId: string;
  /** The first position where history differs from what was chained or signed (see `message`). */
  readonly position: string;
  readonly message: string;
}

/**
 * Where a project's chain is taken up when verification starts after its beginning: a window (--from), or
 * a segment of a verification split by position (segments.ts).
 */
export interface ChainSeed {
  readonly count: number;
  readonly link: string;
  readonly position: string;
  /**
   * A segment's: the count the last checkpoint before it signed, and the first event after that checkpoint,
   * so findings and the unsigned tail read as one pass would give them. A window counts from its seed.
   */
  readonly verified?: { readonly count: number; readonly firstUnverified: string | undefined };
}

interface ChainState {
  count: number;
  link: string;
  lastPosition: string | undefined;
  /** The last checkpoint the computed chain matched, and the first event after it. */
  verifiedCount: number;
  firstUnverified: string | undefined;
  /** Events observed and checkpoints matched in this verification (a segment's share of the whole). */
  observed: number;
  checkpoints: number;
}

/** A project's chain as verification left it: where it ended and what this verification saw of it. */
export interface ChainOutcome {
  readonly projectId: string;
  readonly count: number;
  readonly link: string;
  readonly lastPosition: string | undefined;
  readonly verifiedCount: number;
  readonly observed: number;
  readonly checkpoints: number;
  readonly lastCheckpoint?: AuditCheckpoint;
}

/** What a verification found: its findings in the order found, and each chain it touched, in first-seen order. */
export interface VerificationOutcome {
  readonly findings: readonly Finding[];
  readonly chains: readonly ChainOutcome[];
}

interface ProjectSummary {
  readonly projectId: string;
  readonly events: number;
  readonly head: string;
  readonly lastCheckpoint?: { sequence: number; count: number; position: string; signedAt: string };
  /** Events after the last checkpoint that matched: chained, not yet signed. */
  readonly unsigned: number;
}

export interface VerificationReport {
  readonly ok: boolean;
  readonly findings: readonly Finding[];
  readonly events: number;
  readonly checkpoints: number;
  readonly projects: readonly ProjectSummary[];
}

export class HistoryVerification {
  private readonly chains = new Map<string, ChainState>();
  private readonly pending = new Map<string, ObservedCheckpoint[]>();
  private readonly matched = new Map<string, ObservedCheckpoint>();
  private readonly failed = new Set<string>();
  private readonly found: Finding[] = [];

  constructor(
    private readonly sha256: Sha256Hex,
    checkSignature: CheckSignature,
    checkpoints: readonly ObservedCheckpoint[],
    private readonly seeds: ReadonlyMap<string, ChainSeed> = new Map(),
  ) {
    const byProject = new Map<string, ObservedCheckpoint[]>();
    for (const observed of checkpoints) {
      const list = byProject.get(observed.checkpoint.projectId) ?? [];
      list.push(observed);
      byProject.set(observed.checkpoint.projectId, list);
    }
    for (const [projectId, list] of byProject) {
      list.sort((a, b) => a.checkpoint.sequence - b.checkpoint.sequence);
      const trusted = this.trustedCheckpoints(projectId, list, checkSignature);
      const seeded = seeds.get(projectId)?.count ?? 0;
      this.pending.set(
        projectId,
        trusted
          .filter((c) => c.checkpoint.count > seeded)
          .sort((a, b) => a.checkpoint.count - b.checkpoint.count),
      );
    }
  }

  /**
   * The next position of the global order: the event the store holds there, the link the chain holds
   * there, or both. `unchained`: the position lies past the stored chain's end (the chain's projector has
   * not reached it yet), so no link is expected.
   */
  observe(event: ObservedEvent | undefined, link: StoredLink | undefined, unchained = false): void {
    const projectId = link?.projectId ?? event?.projectId;
    if (projectId === undefined || this.failed.has(projectId)) return;
    const chain = this.chainOf(projectId);
    if (!event || event.projectId !== projectId) {
      const position = link!.position;
      this.fail(
        projectId,
        event ? 'event_changed' : 'event_removed',
        position,
        event
          ? `the event at ${position} now belongs to project ${event.projectId}; the chain holds it as event ` +
              `#${link!.sequence} of ${projectId}`
          : `event #${link!.sequence} of the chain, at ${position}, is no longer in the store`,
      );
      return;
    }
    chain.observed++;
    const digest = eventDigest(this.sha256, event);
    const count = chain.count + 1;
    const next = nextLink(this.sha256, chain.link, digest);
    if (link) {
      if (link.digest !== digest) {
        this.fail(
          projectId,
          'event_changed',
          event.position,
          `the event at ${event.position} differs from the one chained there (#${link.sequence})`,
        );
        return;
      }
      if (link.sequence > count) {
        this.fail(
          projectId,
          'event_removed',
          event.position,
          `the chain holds the event at ${event.position} as #${link.sequence}, but the store holds only ` +
            `${count - 1} chained events before it: ${link.sequence - count} removed after ` +
            `${chain.lastPosition ?? 'the start'}`,
        );
        return;
      }
      if (link.sequence < count || link.link !== next) {
        this.fail(
          projectId,
          'chain_differs',
          event.position,
          `the event at ${event.position} matches its link, but the history before it differs from the chain`,
        );
        return;
      }
    } else if (!unchained) {
      this.fail(
        projectId,
        'event_inserted',
        event.position,
        `the event at ${event.position} was never chained: it was inserted`,
      );
      return;
    }
    if (chain.count === chain.verifiedCount) chain.firstUnverified = event.position;
    chain.count = count;
    chain.link = next;
    chain.lastPosition = event.position;
    this.holdAgainstCheckpoints(projectId, chain);
  }

  /** `complete`: the whole history was read (no --to), so a checkpoint past its end means events were removed. */
  finish(complete: boolean): VerificationReport {
    return verificationReport(this.outcome(complete));
  }

  /** What `finish` reports, as data a verification split by position joins (segments.ts). */
  outcome(complete: boolean): VerificationOutcome {
    if (complete) {
      for (const [projectId, list] of this.pending) {
        const beyond = list[0];
        if (!beyond || this.failed.has(projectId)) continue;
        const chain = this.chainOf(projectId);
        this.fail(
          projectId,
          'checkpoint_beyond_history',
          chain.lastPosition ?? beyond.checkpoint.position,
          `checkpoint #${beyond.checkpoint.sequence} signed ${beyond.checkpoint.count} events up to ` +
            `${beyond.checkpoint.position}; the store holds ${chain.count}: events after ` +
            `${chain.lastPosition ?? 'the start'} were removed`,
        );
      }
    }
    return {
      findings: [...this.found],
      chains: [...this.chains].map(([projectId, chain]) => ({
        projectId,
        count: chain.count,
        link: chain.link,
        lastPosition: chain.lastPosition,
        verifiedCount: chain.verifiedCount,
        observed: chain.observed,
        checkpoints: chain.checkpoints,
        lastCheckpoint: this.matched.get(projectId)?.checkpoint,
      })),
    };
  }

  private holdAgainstCheckpoints(projectId: string, chain: ChainState): void {
    const list = this.pending.get(projectId);
    while (list?.[0] && list[0].checkpoint.count <= chain.count) {
      const observed = list.shift()!;
      const { checkpoint } = observed;
      if (checkpoint.count < chain.count) continue;
      if (checkpoint.position !== chain.lastPosition || checkpoint.head !== chain.link) {
        this.fail(
          projectId,
          'checkpoint_mismatch',
          chain.firstUnverified ?? chain.lastPosition!,
          `history differs from checkpoint #${checkpoint.sequence} (signed ${checkpoint.signedAt} by key ` +
            `${checkpoint.keyId} over ${checkpoint.count} events up to ${checkpoint.position}): the first ` +
            `event that can differ is at ${chain.firstUnverified ?? chain.lastPosition!}`,
        );
        return;
      }
      chain.checkpoints++;
      this.matched.set(projectId, observed);
      chain.verifiedCount = chain.count;
    }
  }

  /** The checkpoints whose signature holds and whose sequence is unbroken; the others become findings. */
  private trustedCheckpoints(
    projectId: string,
    list: readonly ObservedCheckpoint[],
    checkSignature: CheckSignature,
  ): ObservedCheckpoint[] {
    const trusted: ObservedCheckpoint[] = [];
    let before: ObservedCheckpoint | undefined;
    for (const observed of list) {
      const { checkpoint, eventPosition } = observed;
      const payload = checkpointPayload(checkpoint);
      const verdict = checkSignature(checkpoint.keyId, payload, checkpoint.signature);
      if (verdict !== 'valid') {
        this.fail(
          projectId,
          verdict === 'unknown_key' ? 'checkpoint_unknown_key' : 'checkpoint_bad_signature',
          eventPosition,
          verdict === 'unknown_key'
            ? `checkpoint #${checkpoint.sequence} at ${eventPosition} is signed by key ${checkpoint.keyId}, not one of the trusted audit keys`
            : `checkpoint #${checkpoint.sequence} at ${eventPosition}: the signature does not match what it says (altered)`,
        );
        return trusted;
      }
      const gap = before
        ? checkpoint.sequence !== before.checkpoint.sequence + 1 ||
          checkpoint.previous !==
            checkpointDigest(this.sha256, checkpointPayload(before.checkpoint), before.checkpoint.signature)
        : checkpoint.sequence === 0
          ? checkpoint.previous !== null
          : !this.seeds.has(projectId);
      if (gap) {
        this.fail(
          projectId,
          'checkpoint_missing',
          eventPosition,
          `checkpoint #${checkpoint.sequence} at ${eventPosition} does not follow ` +
            (before ? `checkpoint #${before.checkpoint.sequence}` : 'the start') +
            ': a checkpoint before it was removed or altered',
        );
        return trusted;
      }
      trusted.push(observed);
      before = observed;
    }
    return trusted;
  }

  private chainOf(projectId: string): ChainState {
    let chain = this.chains.get(projectId);
    if (!chain) {
      const seed = this.seeds.get(projectId);
      chain = {
        count: seed?.count ?? 0,
        link: seed?.link ?? genesisLink(this.sha256, projectId),
        lastPosition: seed?.position,
        verifiedCount: seed?.verified?.count ?? seed?.count ?? 0,
        firstUnverified: seed?.verified?.firstUnverified,
        observed: 0,
        checkpoints: 0,
      };
      this.chains.set(projectId, chain);
    }
    return chain;
  }

  private fail(projectId: string, kind: FindingKind, position: string, message: string): void {
    this.failed.add(projectId);
    this.found.push({ kind, projectId, position, message });
  }
}

/** The report of an outcome: the verdict, what was checked, and each project's chain as it ended. */
export function verificationReport(outcome: VerificationOutcome): VerificationReport {
  return {
    ok: outcome.findings.length === 0,
    findings: outcome.findings,
    events: outcome.chains.reduce((sum, chain) => sum + chain.observed, 0),
    checkpoints: outcome.chains.reduce((sum, chain) => sum + chain.checkpoints, 0),
    projects: outcome.chains.map((chain): ProjectSummary => ({
      projectId: chain.projectId,
      events: chain.count,
      head: chain.link,
      lastCheckpoint: chain.lastCheckpoint && {
        sequence: chain.lastCheckpoint.sequence,
        count: chain.lastCheckpoint.count,
        position: chain.lastCheckpoint.position,
        signedAt: chain.lastCheckpoint.signedAt,
      },
      unsigned: chain.count - chain.verifiedCount,
    })),
  };
}
