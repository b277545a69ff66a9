/**
 * Thrown by an uplink handler for a message that can never be accepted (bad JSON, wrong shape, unknown
 * capability...). The broker acknowledges and drops it instead of closing the connection: redelivering
 * it would fail the same way forever and hold up the agent's good traffic behind it.
 */
export class RejectedMessage extends Error {
  override readonly name = 'RejectedMessage';

  constructor(
    /** Short, stable label for metrics: `invalid_json`, `invalid_payload`, ... */
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}
