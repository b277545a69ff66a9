import type { CapabilityDefinition } from '../catalogue/index.js';
import { filedAt, isClockSkewed } from './timing.js';

/**
 * Quality markers of a state entry, computed when the state is read (so `stale` is exact at the moment of
 * the request and needs no job). `valid` stands alone; any other marker means the value is suspect.
 */
export const QUALITY_MARKERS = ['valid', 'stale', 'clock_skew'] as const;
export type QualityMarker = (typeof QUALITY_MARKERS)[number];

export interface QualityInput {
  readonly capability: Pick<CapabilityDefinition, 'aggregation' | 'staleAfterSeconds'>;
  readonly serverTimeMs: number;
  readonly deviceTimeMs: number | undefined;
  readonly nowMs: number;
  /** Start of the site's current local day at nowMs; needed for daily counters. */
  readonly siteDayStartMs: number | undefined;
}

export function qualityOf(input: QualityInput): QualityMarker[] {
  const markers: QualityMarker[] = [];
  if (isStale(input)) markers.push('stale');
  if (isClockSkewed(input.serverTimeMs, input.deviceTimeMs)) markers.push('clock_skew');
  return markers.length === 0 ? ['valid'] : markers;
}

function isStale(input: QualityInput): boolean {
  if (input.nowMs - input.serverTimeMs > input.capability.staleAfterSeconds * 1000) return true;
  // A daily counter measured before the site's last midnight is yesterday's total, whatever its age.
  return (
    input.capability.aggregation === 'counter_daily' &&
    input.siteDayStartMs !== undefined &&
    filedAt(input.serverTimeMs, input.deviceTimeMs) < input.siteDayStartMs
  );
}
