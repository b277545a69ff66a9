import { meaningfulAggregations, type CapabilityDefinition } from '../catalogue/index.js';

/**
 * How the readings of a bucket become one telemetry value. The four the spec names, plus `first`, `last`,
 * `count` and the reset-aware `increase` of counters. A function that would give a wrong number for a
 * capability (a mean of a meter total) is replaced by the capability's default, and the response says so.
 */
export const TELEMETRY_AGGREGATIONS = [
  'avg',
  'min',
  'max',
  'sum',
  'first',
  'last',
  'count',
  'increase',
] as const;
export type TelemetryAggregation = (typeof TELEMETRY_AGGREGATIONS)[number];

/** What one bucket holds: numbers only (a boolean reading counts as 1 for true and 0 for false). */
export interface BucketStats {
  readonly samples: number;
  readonly sum: number;
  readonly min: number;
  readonly max: number;
  readonly first: number;
  readonly last: number;
  /** Counters only: the reset-aware rise between the bucket's own readings; null for everything else. */
  readonly increase: number | null;
}

export function isCounter(capability: Pick<CapabilityDefinition, 'aggregation'>): boolean {
  return capability.aggregation.startsWith('counter_');
}

/**
 * The function actually used for a capability when `requested` was asked for, or undefined when the
 * capability has no bucketed form at all (text).
 */
export function servedAggregation(
  capability: CapabilityDefinition,
  requested: TelemetryAggregation,
): TelemetryAggregation | undefined {
  const meaningful: readonly TelemetryAggregation[] = meaningfulAggregations(capability);
  const fallback = meaningful[0];
  if (fallback === undefined) return undefined;
  if (requested === 'count') return 'count';
  if (requested === 'first') return meaningful.includes('last') ? 'first' : fallback;
  if (requested === 'increase') return isCounter(capability) ? 'increase' : fallback;
  return meaningful.includes(requested) ? requested : fallback;
}

/** How much a counter rose from `previous` to `next`; a drop is a reset, after which it counts from 0. */
export function resetAwareRise(previous: number, next: number): number {
  return next >= previous ? next - previous : next;
}

/** The reset-aware rise along readings in time order. */
export function riseAlong(values: readonly number[]): number {
  let rise = 0;
  for (let i = 1; i < values.length; i++) rise += resetAwareRise(values[i - 1]!, values[i]!);
  return rise;
}

/**
 * The point value of a bucket. For `increase`, `previousLast` is the last reading of the bucket before it
 * (undefined when none is known): the rise across the boundary belongs to the later bucket.
 */
export function pointValue(
  stats: BucketStats,
  aggregation: TelemetryAggregation,
  previousLast: number | undefined,
): number {
  switch (aggregation) {
    case 'avg':
      return stats.sum / stats.samples;
    case 'min':
      return stats.min;
    case 'max':
      return stats.max;
    case 'sum':
      return stats.sum;
    case 'first':
      return stats.first;
    case 'last':
      return stats.last;
    case 'count':
      return stats.samples;
    case 'increase':
      return (
        (stats.increase ?? 0) + (previousLast === undefined ? 0 : resetAwareRise(previousLast, stats.first))
      );
  }
}

/** Adjacent buckets (in time order, disjoint) merged into one, as 5-minute buckets are made from 1-minute ones. */
export function mergeBuckets(buckets: readonly BucketStats[]): BucketStats {
  const [head, ...rest] = buckets;
  if (head === undefined) throw new RangeError('merge of no buckets');
  return rest.reduce<BucketStats>(
    (merged, next) => ({
      samples: merged.samples + next.samples,
      sum: merged.sum + next.sum,
      min: Math.min(merged.min, next.min),
      max: Math.max(merged.max, next.max),
      first: merged.first,
      last: next.last,
      increase:
        merged.increase === null || next.increase === null
          ? null
          : merged.increase + resetAwareRise(merged.last, next.first) + next.increase,
    }),
    head,
  );
}
