import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/infra/logger.js';

// Enough to explain a failure, bounded so a suite that logs errors on purpose cannot grow it without end.
const KEPT_LINES = 200;
const captured: string[] = [];

const sink = new Writable({
  write(chunk: Buffer | string, _encoding, done) {
    captured.push(String(chunk));
    if (captured.length > KEPT_LINES) captured.shift();
    done();
  },
});

/**
 * The logger of a service a test starts. With TEST_LOG_LEVEL everything at that level goes to stdout;
 * otherwise errors are kept in memory, so a test that fails can say what the server logged (root hooks)
 * while a passing run stays quiet.
 */
export function serviceLogger(): Logger {
  const level = process.env.TEST_LOG_LEVEL;
  return level ? createLogger(level) : createLogger('error', sink);
}

/** The error lines kept since the last call, and forgets them. */
export function takeServiceErrors(): string[] {
  return captured.splice(0);
}
