import { InvalidInput } from '../errors.js';

/**
 * How long a pairing window stays open (the spec leaves it to us): long enough to walk to a device and
 * press its pairing button, short enough that a forgotten window does not leave the hub accepting joins.
 * A value outside the bounds is refused, never clamped.
 */
export const PAIRING_WINDOW_SECONDS = { default: 120, min: 30, max: 600 } as const;

export function windowDurationSeconds(requested: number | undefined): number {
  if (requested === undefined) return PAIRING_WINDOW_SECONDS.default;
  if (
    !Number.isInteger(requested) ||
    requested < PAIRING_WINDOW_SECONDS.min ||
    requested > PAIRING_WINDOW_SECONDS.max
  ) {
    throw new InvalidInput('out_of_range', 'durationSeconds', 'invalid_value');
  }
  return requested;
}

/**
 * Times in pairing commands and events are UTC ISO 8601 strings of one fixed shape
 * (`YYYY-MM-DDTHH:mm:ss.sssZ`, what the adapters produce), so comparing them as strings compares instants.
 */
export function deadlineReached(deadline: string, at: string): boolean {
  return at >= deadline;
}
