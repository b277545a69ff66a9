import { checkValue, findCapability, type ValueRefusalReason } from '../catalogue/index.js';

/**
 * Screening of one uplink message's readings. Each reading stands on its own: a bad one is refused and
 * counted, the good ones of the same message are kept (a sensor reporting an out-of-range sentinel must
 * not take the battery level and the temperature of the same message down with it). Nothing is coerced.
 * A message left with no acceptable reading is refused as a whole.
 */

type ReadingRefusalReason = ValueRefusalReason | 'not_a_device_capability';

export interface RefusedReading {
  readonly index: number;
  readonly capability: string;
  readonly reason: ReadingRefusalReason;
}

export interface ScreenedReadings<R> {
  readonly accepted: readonly R[];
  readonly refused: readonly RefusedReading[];
}

export function screenReadings<R extends { readonly capability: string; readonly value: unknown }>(
  readings: readonly R[],
  deviceCapabilities: ReadonlySet<string>,
): ScreenedReadings<R> {
  const accepted: R[] = [];
  const refused: RefusedReading[] = [];
  readings.forEach((reading, index) => {
    const reason = refusalOf(reading, deviceCapabilities);
    if (reason === undefined) accepted.push(reading);
    else refused.push({ index, capability: reading.capability, reason });
  });
  return { accepted, refused };
}

function refusalOf(
  reading: { readonly capability: string; readonly value: unknown },
  deviceCapabilities: ReadonlySet<string>,
): ReadingRefusalReason | undefined {
  const capability = findCapability(reading.capability);
  if (capability === undefined) return 'unknown_capability';
  if (!deviceCapabilities.has(capability.key)) return 'not_a_device_capability';
  const check = checkValue(capability, reading.value);
  return check.ok ? undefined : check.reason;
}
