import { setMaxListeners } from 'node:events';
import type { Server } from 'node:http';
import type { Config, Role } from '../config.js';
import { createApiApp, createLiveHub } from '../api/app.js';
import type { LiveHub } from '../api/live/hub.js';
import { createMetricsOnlyApp } from '../api/metrics-only.js';
import { createHttpServer, listen } from '../api/server.js';
import { openEventStore } from '../eventstore/open.js';
import type { EventStore } from '../eventstore/port.js';
import type { Logger } from '../infra/logger.js';
import { createMetrics, type Metrics } from '../infra/metrics.js';
import { startIngress, type RunningIngress } from '../ingress/start.js';
import { installProjector } from '../projections/checkpoints.js';
import { startLagMonitor, type ProjectionLagMonitor } from '../projections/lag-monitor.js';
import { runProjector } from '../projections/runner.js';
import { scheduledJobs } from '../scheduler/jobs.js';
import { runScheduler } from '../scheduler/scheduler.js';
import { openDatabase, type Database } from './database.js';
import { ProjectorProcess } from './projector-process.js';
import { allProjectors, partitioningOf, SHARED_READ_TYPES } from './projectors.js';
import { PartitionShare } from '../projections/partition-share.js';
import { openClusterLimits, type ClusterLimits } from '../api/cluster-limits/index.js';

export interface RunningService {
  readonly httpPort: number | undefined;
  readonly mqttPort: number | undefined;
  readonly database: Database;
  readonly store: EventStore;
  readonly metrics: Metrics;
  /** The live hub, when this process runs the api role. */
  readonly live: LiveHub | undefined;
  stop(): Promise<void>;
}

export interface ServiceOptions {
  /** Milliseconds since the epoch for every role (token times and deadlines among them); tests move it. */
  readonly now?: () => number;
  /**
   * Run the projector role in a supervised child process started from this CLI script instead of in this
   * process (src/runtime/projector-process.ts); `devcloud serve` asks for it unless PROJECTOR_PROCESS=inline.
   */
  readonly projectorProcessEntry?: string;
  /** Told of each committed projector batch (a projector child reports them to its parent this way). */
  readonly onProjectedBatch?: (projector: string, events: number) => void;
}

/**
 * Starts the roles asked for in one process. Stopping goes in reverse: stop accepting (HTTP, MQTT), let
 * in-flight work drain, let projectors commit their batch and checkpoint, then close the stores.
 */
export async function startService(
  config: Config,
  logger: Logger,
  roles: readonly Role[] = config.ROLES,
  options: ServiceOptions = {},
): Promise<RunningService> {
  const database = await openDatabase(config, logger);
  const store = await openEventStore(config, database, logger, {
    // A projector farther behind the others than one batch reads on its own.
    sharedReads: { eventTypes: SHARED_READ_TYPES, maxEvents: config.PROJECTION_BATCH_SIZE },
  });
  const projectors = allProjectors(await partitioningOf(database.pool, config.PROJECTOR_PARTITIONS, logger));
  // Read-model tables exist before any role answers, even where no projector runs in this process.
  for (const projector of projectors) await installProjector(database.pool, projector);
  const metrics = createMetrics();
  const background = new AbortController();
  const tasks: Promise<unknown>[] = [];
  let server: Server | undefined;

  const projectedBatch = (name: string, events: number) => {
    metrics.projectionBatches.inc({ projector: name });
    metrics.projectedEvents.inc({ projector: name }, events);
    options.onProjectedBatch?.(name, events);
  };
  let projectorProcess: ProjectorProcess | undefined;
  let share: PartitionShare | undefined;
  if (roles.includes('projector') && options.projectorProcessEntry) {
    projectorProcess = new ProjectorProcess({
      entry: options.projectorProcessEntry,
      databaseUrl: database.url,
      logger,
      stopGraceMs: config.SHUTDOWN_GRACE_MS,
      onBatch: projectedBatch,
    });
    projectorProcess.start();
  } else if (roles.includes('projector')) {
    share = projectors.some((p) => p.partition)
      ? await PartitionShare.join(database.locks, logger)
      : undefined;
    for (const projector of projectors) {
      tasks.push(
        runProjector(database.readModels, store, projector, {
          batchSize: config.PROJECTION_BATCH_SIZE,
          coalesceMs: config.PROJECTION_COALESCE_MS,
          locks: database.locks,
          signal: background.signal,
          logger,
          onBatch: projectedBatch,
          share,
        }),
      );
    }
  }

  if (roles.includes('scheduler')) {
    const clock = options.now;
    const now = clock ? () => new Date(clock()) : undefined;
    const jobs = scheduledJobs({ config, store, pool: database.pool, logger, now });
    tasks.push(runScheduler({ locks: database.locks, jobs, logger, signal: background.signal }));
  }

  // Each projector and the scheduler waits on this one signal (its election, or its standby pause): more
  // listeners than the default warning threshold of ten, and not a leak.
  setMaxListeners(Math.max(10, tasks.length), background.signal);

  let ingress: RunningIngress | undefined;
  if (roles.includes('ingress')) {
    ingress = await startIngress({ config, logger, metrics, pool: database.pool, store, now: options.now });
  }

  let live: LiveHub | undefined;
  let lag: ProjectionLagMonitor | undefined;
  let limits: ClusterLimits | undefined;
  if (roles.includes('api')) {
    limits = await openClusterLimits(config, logger);
    live = createLiveHub({ config, logger, store, pool: database.pool, now: options.now });
    await live.start();
    // Measured where this node's answers come from: on a replica, its lag includes the replica's own.
    lag = await startLagMonitor(database.queries, { store, projectors, config, logger, metrics });
    const app = createApiApp({
      config,
      logger,
      metrics,
      pool: database.pool,
      queries: database.queries,
      store,
      live,
      lag,
      limits,
      now: options.now,
    });
    server = await listen(createHttpServer(app, config), config.HTTP_PORT, config.HTTP_HOST);
  } else if (config.METRICS_TOKEN) {
    // Without the api role, HTTP_PORT serves this process's own /metrics, and only that.
    const app = createMetricsOnlyApp({ config, metrics });
    server = await listen(createHttpServer(app, config), config.HTTP_PORT, config.HTTP_HOST);
  }
  const address = server?.address();
  const httpPort = typeof address === 'object' && address ? address.port : undefined;
  logger.info(
    {
      roles,
      httpPort,
      mqttPort: ingress?.mqttPort,
      projectorProcess: projectorProcess?.pid,
      eventStore: store.kind,
      embeddedDatabase: database.embedded,
    },
    'device cloud started',
  );

  let stopping: Promise<void> | undefined;
  return {
    httpPort,
    mqttPort: ingress?.mqttPort,
    database,
    store,
    metrics,
    live,
    stop() {
      stopping ??= (async () => {
        logger.info('stopping');
        if (server) {
          const closed = new Promise<void>((resolve) => server!.close(() => resolve()));
          const grace = setTimeout(() => server!.closeAllConnections(), config.SHUTDOWN_GRACE_MS);
          // Live streams never finish by themselves: each is told stream_error shutdown and ended.
          await live?.close();
          server.closeIdleConnections();
          await closed;
          clearTimeout(grace);
        }
        await lag?.stop();
        await limits?.close();
        // The broker closes before the store: its in-flight uplinks still append.
        await ingress?.close();
        background.abort();
        await Promise.allSettled([...tasks, projectorProcess?.stop()]);
        await share?.leave();
        await store.close();
        await database.close();
        logger.info('stopped');
      })();
      return stopping;
    },
  };
}
