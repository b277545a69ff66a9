/**
 * What a PostgreSQL failure means for the caller, from its SQLSTATE (or the node-postgres / socket error).
 * The API maps these in src/api/http-errors.ts; the broker in src/ingress/broker/agent-gate.ts.
 */
function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** SQLSTATE class 22 (data exception): the values can never be stored; retrying cannot help. */
export function isDataError(error: unknown): boolean {
  return /^22[0-9A-Z]{3}$/.test(codeOf(error) ?? '');
}

const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
]);
// node-postgres' own words for a pool that could not connect in time or a connection that went away.
const CONNECTION_MESSAGES = [
  /timeout exceeded when trying to connect/i,
  /Connection terminated/i,
  /connection (is )?(closed|ended)/i,
  /Client has encountered a connection error/i,
  /Cannot use a pool after calling end/i,
];

// The server is up but cannot take this now: class 53 (too many connections, out of memory or disk), a lock
// it would not wait for, a cancelled statement, a serialization failure or deadlock between transactions.
const BUSY_CODE = /^(53[0-9A-Z]{3}|55P03|57014|40001|40P01)$/;

/** The database answered but refused this attempt for a passing reason: the same request may work in a moment. */
export function isBusyError(error: unknown): boolean {
  return BUSY_CODE.test(codeOf(error) ?? '');
}

/**
 * The database cannot be reached now (class 08: connection exception; 57P01-57P05: shutting down, crash
 * recovery, cannot connect now; a refused or reset socket; a pool connect timeout): try again later.
 */
export function isConnectionError(error: unknown): boolean {
  const code = codeOf(error);
  if (code !== undefined) {
    if (/^08[0-9A-Z]{3}$/.test(code) || /^57P0[1-5]$/.test(code) || SOCKET_CODES.has(code)) return true;
    if (/^[0-9A-Z]{5}$/.test(code)) return false;
  }
  const message = error instanceof Error ? error.message : '';
  if (CONNECTION_MESSAGES.some((pattern) => pattern.test(message))) return true;
  // AggregateError from a connect to several addresses (localhost: ::1 and 127.0.0.1).
  const inner = (error as { errors?: unknown[] } | null)?.errors;
  return Array.isArray(inner) && inner.length > 0 && inner.every(isConnectionError);
}
