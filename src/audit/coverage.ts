import type { EventStore } from '../eventstore/port.js';
import type { Pool } from '../infra/postgres/pool.js';
import { linksAt } from './chain-links.js';
import { projectCheckpoints } from './stored-checkpoints.js';

/** The checkpoint that vouches for an event: the first of its project whose count reaches the event's link. */
interface Coverage {
  readonly sequence: number;
  readonly signedAt: string;
}

/**
 * For each position, the first checkpoint whose count covers the event's place in its project's chain, or
 * undefined when the event is not chained yet or no checkpoint signs it yet (`--checkpoints` of
 * `devcloud audit grants|commands`). What the checkpoint says is taken as stored: `audit verify` judges it.
 */
export async function checkpointsCovering(
  deps: { readonly store: EventStore; readonly pool: Pool },
  positions: readonly string[],
): Promise<Map<string, Coverage | undefined>> {
  const links = await linksAt(deps.pool, positions);
  const counts = new Map<string, number[]>();
  const signed = new Map<string, { count: number; coverage: Coverage }[]>();
  for (const projectId of new Set([...links.values()].map((l) => l.projectId))) {
    const checkpoints = (await projectCheckpoints(deps.store, projectId))
      .map(({ checkpoint: c }) => ({
        count: c.count,
        coverage: { sequence: c.sequence, signedAt: c.signedAt },
      }))
      .sort((a, b) => a.count - b.count);
    signed.set(projectId, checkpoints);
    counts.set(
      projectId,
      checkpoints.map((c) => c.count),
    );
  }
  const covering = new Map<string, Coverage | undefined>();
  for (const position of positions) {
    const link = links.get(position);
    const list = link && signed.get(link.projectId);
    covering.set(
      position,
      link && list ? list[firstAtLeast(counts.get(link.projectId)!, link.sequence)]?.coverage : undefined,
    );
  }
  return covering;
}

/** Index of the first value >= `target` in ascending `values` (values.length when none is). */
function firstAtLeast(values: readonly number[], target: number): number {
  let low = 0;
  let high = values.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (values[middle]! < target) low = middle + 1;
    else high = middle;
  }
  return low;
}
