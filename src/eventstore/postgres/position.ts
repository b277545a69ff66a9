import { InvalidPositionError } from '../port.js';

/**
 * A Postgres position is (writing transaction id, global sequence number), encoded as 32 hex digits so
 * positions sort as strings in the same order as readers see events.
 */
export interface PgPosition {
  readonly transactionId: bigint;
  readonly globalPosition: bigint;
}

const shape = /^[0-9a-f]{32}$/;

let lastTransaction: bigint | string | undefined;
let lastTransactionHex = '';

export function encodePgPosition(transactionId: bigint | string, globalPosition: bigint | string): string {
  // The events of a page come mostly in runs of one transaction (one append each).
  if (transactionId !== lastTransaction) {
    lastTransactionHex = hex16(transactionId);
    lastTransaction = transactionId;
  }
  return lastTransactionHex + hex16(globalPosition);
}

/**
 * 16 hex digits of a non-negative 64-bit integer (a bigint, or its decimal digits). Readers encode one
 * position per event; up to 15 digits are exact as a double and go without a BigInt, several times cheaper.
 * Anything else goes through BigInt, which refuses what is not an integer.
 */
function hex16(value: bigint | string): string {
  const digits = typeof value === 'string' && FEW_DIGITS.test(value) ? Number(value) : BigInt(value);
  return digits.toString(16).padStart(16, '0');
}

const FEW_DIGITS = /^[0-9]{1,15}$/;

export function decodePgPosition(position: string): PgPosition {
  if (!shape.test(position)) throw new InvalidPositionError(position);
  return {
    transactionId: BigInt('0x' + position.slice(0, 16)),
    globalPosition: BigInt('0x' + position.slice(16)),
  };
}

/**
 * Positions of the same width sort as strings in the store's order: only their shape is checked, no number
 * decoded (verification compares a pair for every event it reads).
 */
export function comparePgPositions(a: string, b: string): number {
  if (!shape.test(a)) throw new InvalidPositionError(a);
  if (!shape.test(b)) throw new InvalidPositionError(b);
  return a < b ? -1 : a > b ? 1 : 0;
}

export function isPgPosition(position: string): boolean {
  return shape.test(position);
}
