import type { Position } from '@kurrent/kurrentdb-client';
import { InvalidPositionError } from '../port.js';

/**
 * A KurrentDB position is (commit, prepare), encoded as 16 + 16 lowercase hex digits: the same shape as
 * Postgres positions, and fixed width so that string order is global order (commit first, then prepare
 * for the events of one multi-event commit).
 */

const shape = /^[0-9a-f]{32}$/;
const maxUint64 = (1n << 64n) - 1n;

export function encodePosition(position: Position): string {
  return hex16(position.commit, 'commit') + hex16(position.prepare, 'prepare');
}

export function decodePosition(position: string): Position {
  if (!shape.test(position)) throw new InvalidPositionError(position);
  return { commit: BigInt('0x' + position.slice(0, 16)), prepare: BigInt('0x' + position.slice(16)) };
}

export function isPosition(position: string): boolean {
  return shape.test(position);
}

export function comparePositions(a: string, b: string): number {
  decodePosition(a);
  decodePosition(b);
  return a < b ? -1 : a > b ? 1 : 0;
}

function hex16(value: bigint, part: string): string {
  // The server uses -1 for "no position"; encoding it would wrap around and sort after everything.
  if (value < 0n || value > maxUint64)
    throw new RangeError(`KurrentDB ${part} position out of range: ${value}`);
  return value.toString(16).padStart(16, '0');
}
