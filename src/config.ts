import path from 'node:path';
import { z } from 'zod';

/**
 * Every setting the service reads, read once from the environment and validated here.
 * A bad value stops start-up with a message naming the variable and what it accepts.
 */
const roles = ['api', 'ingress', 'projector', 'scheduler'] as const;
export type Role = (typeof roles)[number];

const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();

const schema = z.object({
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'a postgres:// or postgresql:// connection string')
    .optional(),
  EVENTSTORE_URL: z
    .string()
    .regex(
      /^(kurrentdb|esdb|kurrentdb\+discover|esdb\+discover|postgres|postgresql):\/\//,
      'a kurrentdb://, esdb:// or postgres:// connection string',
    )
    .optional(),
  DATA_DIR: z.string().min(1).default('.data'),
  EMBEDDED_PG_PORT: port.default(54329),
  HTTP_HOST: z.string().min(1).default('0.0.0.0'),
  HTTP_PORT: port.default(8080),
  MQTT_HOST: z.string().min(1).default('0.0.0.0'),
  MQTT_PORT: port.default(8883),
  MQTT_PUBLIC_URL: z.string().optional(),
  MQTT_MAX_PACKET_BYTES: positiveInt.default(65536),
  PUBLIC_BASE_URL: z.url().default('http://localhost:8080'),
  TRUST_PROXY_HOPS: z.coerce.number().int().min(0).max(10).default(0),
  RATE_LIMIT_PER_SECOND: positiveInt.default(30),
  RATE_LIMIT_BURST: positiveInt.default(60),
  // Unset: GET /metrics does not exist. Set: it answers only to `Authorization: Bearer <METRICS_TOKEN>`.
  METRICS_TOKEN: z.string().min(32, 'at least 32 characters').optional(),
  ROLES: z
    .string()
    .default(roles.join(','))
    .transform((s) =>
      s
        .split(',')
        .map((r) => r.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.enum(roles)).min(1)),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  PROJECTION_BATCH_SIZE: positiveInt.max(50_000).default(2000),
  PROJECTION_IDLE_POLL_MS: positiveInt.default(500),
  SHUTDOWN_GRACE_MS: positiveInt.default(10_000),
  // Readings ingest groups concurrent messages into one append: at most this long or this many (docs/telemetry.md).
  READINGS_BATCH_WINDOW_MS: z.coerce.number().int().min(0).max(1000).default(5),
  READINGS_BATCH_MAX_MESSAGES: positiveInt.max(5000).default(500),
  // Retention in days: reading events in the event store, raw readings, and each bucket table.
  // At least 8: a reading may arrive up to 7 days late, and its raw row and buckets must still be there.
  READINGS_RETENTION_DAYS: positiveInt.default(30),
  TELEMETRY_RAW_RETENTION_DAYS: positiveInt.min(8).default(30),
  TELEMETRY_1M_RETENTION_DAYS: positiveInt.min(8).default(35),
  TELEMETRY_1H_RETENTION_DAYS: positiveInt.min(8).default(400),
  TELEMETRY_1D_RETENTION_DAYS: positiveInt.min(8).default(3660),
});

export type Config = Readonly<
  Omit<z.infer<typeof schema>, 'DATA_DIR'> & {
    DATA_DIR: string;
  }
>;

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const variable = String(issue.path[0] ?? 'environment');
    throw new ConfigError(`invalid configuration: ${variable}: ${issue.message}`);
  }
  return Object.freeze({ ...parsed.data, DATA_DIR: path.resolve(parsed.data.DATA_DIR) });
}
