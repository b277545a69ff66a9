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

export function encodePgPosition(transactionId: bigint | string, globalPosition: bigint | string): string {
  return (
    BigInt(transactionId).toString(16).padStart(16, '0') +
    BigInt(globalPosition).toString(16).padStart(16, '0')
  );
}

export function decodePgPosition(position: string): PgPosition {
  if (!shape.test(position)) throw new InvalidPositionError(position);
  return {
    transactionId: BigInt('0x' + position.slice(0, 16)),
    globalPosition: BigInt('0x' + position.slice(16)),
  };
}

export function isPgPosition(position: string): boolean {
  return shape.test(position);
}
