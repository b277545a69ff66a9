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
  // A read-only replica (hot standby) of DATABASE_URL's database: API nodes answer read-model queries from it
  // (docs/deployment.md, "Read replicas").
  DATABASE_REPLICA_URL: z
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
  // KurrentDB cluster: $all subscriptions from followers (docs/deployment.md, "A KurrentDB cluster").
  EVENTSTORE_FOLLOWER_READS: z.stringbool().default(false),
  DATA_DIR: z.string().min(1).default('.data'),
  EMBEDDED_PG_PORT: port.default(54329),
  HTTP_HOST: z.string().min(1).default('0.0.0.0'),
  HTTP_PORT: port.default(8080),
  MQTT_HOST: z.string().min(1).default('0.0.0.0'),
  MQTT_PORT: port.default(8883),
  MQTT_PUBLIC_URL: z.string().optional(),
  MQTT_MAX_PACKET_BYTES: positiveInt.default(65536),
  // Set on every process of a deployment that runs several of a role (docs/deployment.md): broker nodes
  // share agent sessions, takeovers and wills, API processes their request and stream limits, through this
  // Redis, under keys and channels named by the namespace.
  CLUSTER_REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'a redis:// or rediss:// URL')
    .optional(),
  CLUSTER_NAMESPACE: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ and -, at most 64')
    .default('devcloud'),
  // How often each broker node tells the others it is alive. The wills of a node silent for three of these
  // are published by the others (at their next sweep, every four): 15 to 35 s after it died by default.
  CLUSTER_HEARTBEAT_MS: positiveInt.min(100).max(60_000).default(5000),
  PUBLIC_BASE_URL: z.url().default('http://localhost:8080'),
  TRUST_PROXY_HOPS: z.coerce.number().int().min(0).max(10).default(0),
  RATE_LIMIT_PER_SECOND: positiveInt.default(30),
  RATE_LIMIT_BURST: positiveInt.default(60),
  // Unset: GET /metrics does not exist. Set: it answers only to `Authorization: Bearer <METRICS_TOKEN>`.
  METRICS_TOKEN: z.string().min(32, 'at least 32 characters').optional(),
  // Slowloris guards: a request must send its headers within HEADERS, and all of itself within REQUEST;
  // neither applies once a response (such as a live stream) is under way. At most MAX_CONNECTIONS sockets.
  HTTP_HEADERS_TIMEOUT_MS: positiveInt.max(600_000).default(10_000),
  HTTP_REQUEST_TIMEOUT_MS: positiveInt.max(3_600_000).default(30_000),
  HTTP_MAX_CONNECTIONS: positiveInt.default(10_000),
  // Live stream (docs/api.md, "Live stream"): concurrent streams per OAuth client and API process; frames
  // kept in memory for resumes; unsent bytes a client may hold before live frames wait for it (it is caught up
  // at its pace instead); how long it may read none of them before it is cut as too slow.
  LIVE_MAX_STREAMS_PER_CLIENT: positiveInt.max(10_000).default(10),
  LIVE_WINDOW_FRAMES: positiveInt.max(5_000_000).default(50_000),
  LIVE_CLIENT_BUFFER_BYTES: positiveInt.min(16_384).default(1_048_576),
  LIVE_CLIENT_STALL_MS: positiveInt.min(100).max(600_000).default(30_000),
  // Set: token-signing private keys are stored AES-256-GCM encrypted under it. Unset: stored in clear.
  SIGNING_KEY_ENCRYPTION_KEY: z
    .string()
    .refine((v) => Buffer.from(v, 'base64').length === 32, '32 bytes, base64-encoded')
    .optional(),
  // How long each API process caches the token-signing keys: a rotation or an emergency revoke made elsewhere
  // (the CLI, another server) reaches it within this (docs/api.md, Access tokens).
  SIGNING_KEY_REFRESH_MS: positiveInt.min(100).max(600_000).default(10_000),
  // Audit chain (docs/audit.md): how often the scheduler's leader signs each moved chain head, and the key
  // the audit signing keys' private parts are sealed under (unset: stored in clear). The interval is a
  // divisor of a minute or a whole number of minutes dividing an hour, so it maps onto the cron schedule.
  AUDIT_CHECKPOINT_INTERVAL_SECONDS: positiveInt
    .refine(
      (v) => (v < 60 ? 60 % v === 0 && v >= 5 : v % 60 === 0 && 60 % (v / 60) === 0),
      '5-30 dividing a minute, or 60-3600 a whole number of minutes dividing an hour',
    )
    .default(60),
  AUDIT_SIGNING_KEY_ENCRYPTION_KEY: z
    .string()
    .refine((v) => Buffer.from(v, 'base64').length === 32, '32 bytes, base64-encoded')
    .optional(),
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
  // Events per projection transaction at most: a projector behind the store takes this many at once, and a
  // larger batch costs less per event (telemetry bucket upserts are per batch, not per reading).
  PROJECTION_BATCH_SIZE: positiveInt.max(50_000).default(10_000),
  // `devcloud serve` with the projector role and others: `process` runs the projectors in a child process of
  // their own (its own event loop and core), `inline` in the serving process (docs/performance.md).
  PROJECTOR_PROCESS: z.enum(['process', 'inline']).default('process'),
  // Partitions of each heavy projector (state, telemetry) on a database that has none recorded yet; after
  // that the recorded count stands and `devcloud projections partition` changes it (docs/deployment.md).
  PROJECTOR_PARTITIONS: positiveInt.max(64).default(1),
  // How long a subscription at the head waits for an append notification before it reads anyway: a safety
  // net only (notifications wake it, a lost LISTEN connection is opened again), so long enough to cost
  // little when nothing happens (docs/eventstore.md).
  PROJECTION_IDLE_POLL_MS: positiveInt.default(2000),
  // A live projector woken by an append reads no sooner than this after its previous read, so a steady
  // stream of small appends is applied in fewer, larger batches (docs/eventstore.md); 0 reads at once.
  PROJECTION_COALESCE_MS: z.coerce.number().int().min(0).max(1000).default(25),
  // /health says degraded when a projector's oldest unprojected event is older than this (docs/projections.md).
  PROJECTION_LAG_DEGRADED_SECONDS: positiveInt.max(86_400).default(30),
  // How often the api role measures projection lag for /health, /metrics and the state endpoint.
  PROJECTION_LAG_INTERVAL_MS: positiveInt.min(100).max(60_000).default(2000),
  SHUTDOWN_GRACE_MS: positiveInt.default(10_000),
  // Readings ingest groups concurrent messages into one append: at most this long or this many (docs/telemetry.md).
  READINGS_BATCH_WINDOW_MS: z.coerce.number().int().min(0).max(1000).default(5),
  READINGS_BATCH_MAX_MESSAGES: positiveInt.max(5000).default(500),
  // Per-agent readings quota, a token bucket per agent counted in readings (docs/mqtt.md §7): sustained
  // readings/s and burst. Over it the agent's PUBACKs wait; nothing is refused. About ten times what a
  // large hub sends, and a burst that lets it flush a short outage's queue at once.
  READINGS_QUOTA_PER_SECOND: positiveInt.default(2000),
  READINGS_QUOTA_BURST: positiveInt.default(10_000),
  // Per-agent command-ack quota, the same kind of bucket counted in acks (docs/mqtt.md §7).
  COMMAND_ACKS_QUOTA_PER_SECOND: positiveInt.default(50),
  COMMAND_ACKS_QUOTA_BURST: positiveInt.default(500),
  // Retention in days: reading events in the event store, raw readings, and each bucket table.
  // At least 8: a reading may arrive up to 7 days late, and its raw row and buckets must still be there.
  READINGS_RETENTION_DAYS: positiveInt.default(30),
  TELEMETRY_RAW_RETENTION_DAYS: positiveInt.min(8).default(30),
  TELEMETRY_1M_RETENTION_DAYS: positiveInt.min(8).default(35),
  TELEMETRY_1H_RETENTION_DAYS: positiveInt.min(8).default(400),
  TELEMETRY_1D_RETENTION_DAYS: positiveInt.min(8).default(3660),
});

/** Every variable the configuration reads (README.md's Configuration table has a row for each). */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(schema.shape);

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
  if (parsed.data.DATABASE_REPLICA_URL && !parsed.data.DATABASE_URL)
    throw new ConfigError(
      'invalid configuration: DATABASE_REPLICA_URL: a replica of the DATABASE_URL server, which is not set',
    );
  return Object.freeze({ ...parsed.data, DATA_DIR: path.resolve(parsed.data.DATA_DIR) });
}
