import type { ChainOutcome, ChainSeed, Finding, VerificationOutcome } from './verification.js';

/**
 * A verification split by position into segments that run at once, each taken up from the stored chain at
 * its start (its seeds: every project's last link before it). Joined, they say what one pass over the whole
 * would say. A segment's findings stand for a project only if no earlier segment found anything for it (one
 * pass stops at a project's first finding), and each segment must end every chain exactly where the next
 * one's seeds take it up: the seeds come from stored links, so a segment that started from links its
 * predecessor did not verify would vouch for nothing.
 */
export interface VerifiedSegment {
  /** Each project's chain where this segment takes it up (the first segment's: the window's, or none). */
  readonly seeds: ReadonlyMap<string, ChainSeed>;
  /** Where the segment starts: the position the seeds were taken before. */
  readonly start: string | undefined;
  readonly outcome: VerificationOutcome;
}

export function joinSegments(segments: readonly VerifiedSegment[]): VerificationOutcome {
  const findings: Finding[] = [];
  const failed = new Set<string>();
  const chains = new Map<string, ChainOutcome>();
  // Where each chain stands after the segments joined so far.
  const ends = new Map<string, ChainSeed>(segments[0]?.seeds ?? []);
  for (const [index, segment] of segments.entries()) {
    if (index > 0) {
      for (const projectId of new Set([...ends.keys(), ...segment.seeds.keys()])) {
        if (failed.has(projectId)) continue;
        const end = ends.get(projectId);
        const seed = segment.seeds.get(projectId);
        if (sameHead(end, seed)) continue;
        const position = seed?.position ?? end!.position;
        findings.push({
          kind: 'chain_differs',
          projectId,
          position,
          message:
            `the chain stored before ${segment.start ?? 'the start'} holds ${seed?.count ?? 0} events of ` +
            `${projectId} up to ${seed?.position ?? 'none'}; verified, the history holds ${end?.count ?? 0} up ` +
            `to ${end?.position ?? 'none'}`,
        });
        failed.add(projectId);
      }
    }
    const failedHere = new Set<string>();
    for (const finding of segment.outcome.findings) {
      if (failed.has(finding.projectId)) continue;
      findings.push(finding);
      failedHere.add(finding.projectId);
    }
    for (const chain of segment.outcome.chains) {
      if (failed.has(chain.projectId)) continue;
      const before = chains.get(chain.projectId);
      chains.set(chain.projectId, {
        ...chain,
        observed: (before?.observed ?? 0) + chain.observed,
        checkpoints: (before?.checkpoints ?? 0) + chain.checkpoints,
        lastCheckpoint: chain.lastCheckpoint ?? before?.lastCheckpoint,
      });
      if (chain.lastPosition !== undefined) {
        ends.set(chain.projectId, { count: chain.count, link: chain.link, position: chain.lastPosition });
      }
    }
    for (const projectId of failedHere) failed.add(projectId);
  }
  return { findings, chains: [...chains.values()] };
}

function sameHead(a: ChainSeed | undefined, b: ChainSeed | undefined): boolean {
  return a?.count === b?.count && a?.link === b?.link && a?.position === b?.position;
}
