import { findCapability } from './capabilities.js';
import type { CapabilityDefinition } from './capabilities.js';

/**
 * Value validation shared by readings (ingress) and commands (API, safety gate). Nothing is ever
 * coerced: a value is accepted exactly as given or refused with a machine-readable reason.
 */

export const VALUE_REFUSAL_REASONS = [
  'unknown_capability',
  'wrong_type',
  'not_finite',
  'out_of_range',
  'off_step',
  'not_in_enum',
  'text_too_long',
] as const;

export type ValueRefusalReason = (typeof VALUE_REFUSAL_REASONS)[number];

export type CommandValueRefusalReason = ValueRefusalReason | 'capability_not_writable';

export type CapabilityValue = number | boolean | string;

export type ValueCheck<Reason extends string = ValueRefusalReason> =
  { readonly ok: true; readonly value: CapabilityValue } | { readonly ok: false; readonly reason: Reason };

/** Longest text value accepted, in UTF-16 code units (String.length): a bound on what we store and fan out. */
export const MAX_TEXT_LENGTH = 64;

// Quotients within this distance of a whole number are on the grid: 0.3 / 0.1 is 2.9999999999999996.
const STEP_TOLERANCE = 1e-9;

/** Whether value is a whole multiple of step, forgiving the rounding error of binary floating point. */
export function isOnStep(value: number, step: number): boolean {
  const quotient = value / step;
  // Far from zero the rounding error of the division grows with the quotient itself.
  const tolerance = Math.max(STEP_TOLERANCE, Math.abs(quotient) * 8 * Number.EPSILON);
  return Math.abs(quotient - Math.round(quotient)) <= tolerance;
}

/** The parts of a catalogue entry that decide whether a value is acceptable. */
export type ValueRules = Pick<CapabilityDefinition, 'type' | 'range' | 'step' | 'enum'>;

/** Checks a value against the rules of a capability already found in the catalogue. */
export function checkValue(
  rules: ValueRules,
  value: unknown,
): ValueCheck<Exclude<ValueRefusalReason, 'unknown_capability'>> {
  switch (rules.type) {
    case 'boolean':
      // 1, '1', 'on' and 'true' are refused by the spec: only the JSON literals true and false.
      return typeof value === 'boolean' ? { ok: true, value } : { ok: false, reason: 'wrong_type' };
    case 'number':
      return checkNumber(rules, value);
    case 'text':
      return checkText(rules, value);
  }
}

function checkNumber(
  rules: ValueRules,
  value: unknown,
): ValueCheck<Exclude<ValueRefusalReason, 'unknown_capability'>> {
  if (typeof value !== 'number') return { ok: false, reason: 'wrong_type' };
  if (!Number.isFinite(value)) return { ok: false, reason: 'not_finite' };
  const { range, step } = rules;
  if (range?.min !== undefined && value < range.min) return { ok: false, reason: 'out_of_range' };
  if (range?.max !== undefined && value > range.max) return { ok: false, reason: 'out_of_range' };
  if (step !== undefined && !isOnStep(value, step)) return { ok: false, reason: 'off_step' };
  return { ok: true, value };
}

function checkText(
  rules: ValueRules,
  value: unknown,
): ValueCheck<Exclude<ValueRefusalReason, 'unknown_capability'>> {
  if (typeof value !== 'string') return { ok: false, reason: 'wrong_type' };
  // Length first, so an oversized value is refused without being compared against anything.
  if (value.length > MAX_TEXT_LENGTH) return { ok: false, reason: 'text_too_long' };
  if (rules.enum !== undefined && !rules.enum.includes(value)) return { ok: false, reason: 'not_in_enum' };
  return { ok: true, value };
}

/** Validates a reading or a command value for a capability key. */
export function validateValue(capabilityKey: string, value: unknown): ValueCheck {
  const capability = findCapability(capabilityKey);
  if (capability === undefined) return { ok: false, reason: 'unknown_capability' };
  return checkValue(capability, value);
}

/**
 * Validates a command value: the capability must also be writable. Being writable in the catalogue
 * makes nothing controllable by itself; the safety gate still needs a grant and the class ceremony.
 */
export function validateCommandValue(
  capabilityKey: string,
  value: unknown,
): ValueCheck<CommandValueRefusalReason> {
  const capability = findCapability(capabilityKey);
  if (capability === undefined) return { ok: false, reason: 'unknown_capability' };
  if (!capability.writable) return { ok: false, reason: 'capability_not_writable' };
  return checkValue(capability, value);
}
