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
