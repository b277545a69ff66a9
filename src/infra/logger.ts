import { pino, type Logger } from 'pino';

/** The one logger. Secrets never reach it: authorization headers and client secrets are redacted. */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'device-cloud' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: [
          'req.headers.authorization',
          '*.client_secret',
          '*.clientSecret',
          'clientSecret',
          'client_secret',
          'password',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}

export type { Logger };

/**
 * Token-shaped text in a string bound for the logs (a request path a client put a token into), replaced by
 * `[redacted]`: the value of any `…token=` or `…secret=` (`=` also %-encoded), a JWT (base64url JSON begins
 * `eyJ`, with any further dotted parts) and a client secret (`dcs_…`). A value runs to the next separator,
 * so too much is hidden rather than too little.
 */
export function redactSecrets(text: string): string {
  return text
    .replace(/([\w-]*(?:token|secret)(?:=|%3D))(?:(?!%26)[^&/;#\s])+/gi, '$1[redacted]')
    .replace(/eyJ[\w-]*(?:\.[\w-]*)*/g, '[redacted]')
    .replace(/dcs_[\w-]+/g, '[redacted]');
}
