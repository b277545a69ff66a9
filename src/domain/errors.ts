/**
 * The kinds of "no" the domain can say. Each kind is one class; the API maps each to one HTTP status in
 * one place (src/api/http-errors.ts), so a refusal reads the same wherever it comes from.
 */
export abstract class DomainError extends Error {
  abstract readonly kind: string;
}

/**
 * The caller's token lacks a scope the request needs, found only once the request is read (an S3 command
 * needs commands:high_risk). Answered like a missing route scope: 403 without reasons.
 */
export class MissingScope extends DomainError {
  readonly kind = 'missing_scope';
  constructor(readonly scope: string) {
    super(`missing scope: ${scope}`);
  }
}

/** A policy refusal (e.g. the safety gate): every reason is a machine-readable code. */
export class Refusal extends DomainError {
  readonly kind = 'refusal';
  constructor(
    readonly reasons: readonly string[],
    /** More for the body beside reasons, e.g. the S3 challenge to answer. */
    readonly details: Readonly<Record<string, unknown>> = {},
  ) {
    super(`refused: ${reasons.join(', ')}`);
  }
}

/** The request clashes with the current state (window already open, idempotency key reused...). */
export class Conflict extends DomainError {
  readonly kind = 'conflict';
  constructor(
    readonly reason: string,
    readonly details: Readonly<Record<string, unknown>> = {},
  ) {
    super(`conflict: ${reason}`);
  }
}

/** A value or body that fails validation: wrong type, out of range, missing. Nothing is coerced. */
export class InvalidInput extends DomainError {
  readonly kind = 'invalid_input';
  constructor(
    readonly reason: string,
    readonly field?: string,
    readonly errorCode: 'invalid_request' | 'invalid_value' = 'invalid_request',
  ) {
    super(`invalid input${field ? ` (${field})` : ''}: ${reason}`);
  }
}

/** The thing does not exist, or is not visible to the caller (the two are indistinguishable). */
export class NotFound extends DomainError {
  readonly kind = 'not_found';
  constructor(readonly what: string) {
    super(`${what} not found`);
  }
}
