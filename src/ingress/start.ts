import { isIP } from 'node:net';
import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { EventStore } from '../eventstore/port.js';
import type { Metrics } from '../infra/metrics.js';
import type { Pool } from '../infra/postgres/pool.js';
import { startBroker } from './broker/broker.js';
import { readModelAgentDirectory } from './read-model-agent-directory.js';
import { CommandDelivery } from './control/command-delivery.js';
import { runCommandDispatcher } from './control/command-dispatcher.js';
import { ConnectivityRecorder } from './connectivity.js';
import { resendToAgent, runEdgeDispatcher } from './downlink.js';
import { loadOrCreateAuthority } from './pki/authority.js';
import { createReadingsIngestor } from './readings/ingestor.js';
import { AgentQuota } from './readings/reading-quota.js';
import { uplinkDispatch, type ReadingsPort } from './uplink.js';

export interface RunningIngress {
  readonly mqttPort: number;
  /** Stops the broker (each agent reported offline, in-flight uplinks settled) and the edge dispatcher. */
  close(): Promise<void>;
}

export interface IngressDependencies {
  readonly config: Pick<
    Config,
    | 'DATA_DIR'
    | 'MQTT_HOST'
    | 'MQTT_PORT'
    | 'MQTT_MAX_PACKET_BYTES'
    | 'MQTT_PUBLIC_URL'
    | 'CLUSTER_REDIS_URL'
    | 'CLUSTER_NAMESPACE'
    | 'CLUSTER_HEARTBEAT_MS'
    | 'READINGS_BATCH_WINDOW_MS'
    | 'READINGS_BATCH_MAX_MESSAGES'
    | 'READINGS_QUOTA_PER_SECOND'
    | 'READINGS_QUOTA_BURST'
    | 'COMMAND_ACKS_QUOTA_PER_SECOND'
    | 'COMMAND_ACKS_QUOTA_BURST'
  >;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly pool: Pool;
  readonly store: EventStore;
  /** Default: the readings ingestor (grouped appends, deterministic event ids). */
  readonly readings?: ReadingsPort & { close?(): Promise<void> };
  /** The server clock stamped on readings (receivedAt); tests run it fast to cross days. */
  readonly now?: () => number;
}

/** The ingress role: the mTLS broker over the edge CA, what uplinks record, and the downlink dispatcher. */
export async function startIngress(deps: IngressDependencies): Promise<RunningIngress> {
  const { config, logger, metrics, pool, store } = deps;
  const authority = await loadOrCreateAuthority(path.join(config.DATA_DIR, 'pki'));
  const serverTls = await authority.issueServerCertificate(publicNames(config.MQTT_PUBLIC_URL));
  const directory = readModelAgentDirectory(pool);
  const background = new AbortController();
  const readings =
    deps.readings ??
    createReadingsIngestor({
      store,
      logger,
      metrics,
      batchWindowMs: config.READINGS_BATCH_WINDOW_MS,
      maxBatchMessages: config.READINGS_BATCH_MAX_MESSAGES,
      quota: { readingsPerSecond: config.READINGS_QUOTA_PER_SECOND, burst: config.READINGS_QUOTA_BURST },
      now: deps.now,
    });

  const clock = deps.now ?? Date.now;
  const commands = new CommandDelivery({
    store,
    pool,
    logger,
    now: () => new Date(clock()),
    metrics: metrics.commands,
    ackQuota: new AgentQuota({
      perSecond: config.COMMAND_ACKS_QUOTA_PER_SECOND,
      burst: config.COMMAND_ACKS_QUOTA_BURST,
      counts: 'command acks',
      logger,
      onOverQuota: () => metrics.commandAcksOverQuota.inc(),
    }),
    onAckDropped: (reason) => metrics.commandAcksDropped.inc({ reason }),
  });
  const uplink = uplinkDispatch({
    store,
    directory,
    readings,
    commands,
    connectivity: new ConnectivityRecorder(store),
    // Uplinks only arrive once the broker below is running.
    onAgentOnline: (agent) => {
      // Devices first: an agent that lost its state learns the public ids before their commands.
      resendToAgent(pool, store, broker, agent, new Date(clock()), logger)
        .catch((error: unknown) =>
          logger.error({ err: error, agentId: agent.agentId }, 'resending downlink state failed'),
        )
        .then(() => commands.agentOnline(agent))
        .catch((error: unknown) =>
          logger.error({ err: error, agentId: agent.agentId }, 'sending pending commands failed'),
        );
    },
    onJoinIgnored: (reason) => metrics.pairingJoinsIgnored.inc({ reason }),
    now: () => new Date(clock()),
    logger,
  });

  const broker = await startBroker({
    host: config.MQTT_HOST,
    port: config.MQTT_PORT,
    tls: { key: serverTls.keyPem, cert: serverTls.certPem, ca: authority.certificatePem },
    maxPacketBytes: config.MQTT_MAX_PACKET_BYTES,
    directory,
    onUplink: uplink.onUplink,
    onAgentOffline: uplink.onAgentOffline,
    // Its commands now go through the node it moved to; this one must not send any until it is back here.
    onAgentMovedAway: (agentId) => commands.agentOffline(agentId),
    onRejected: (reason) => metrics.mqttRejected.inc({ reason }),
    logger,
    ...(config.CLUSTER_REDIS_URL
      ? {
          cluster: {
            redisUrl: config.CLUSTER_REDIS_URL,
            namespace: config.CLUSTER_NAMESPACE,
            heartbeatMs: config.CLUSTER_HEARTBEAT_MS,
          },
        }
      : {}),
  });
  commands.attach(broker);
  metrics.agentsConnected.measure(() => broker.connectedAgents);
  const dispatcher = runEdgeDispatcher({ store, pool, broker, logger, signal: background.signal });
  const commandDispatcher = runCommandDispatcher({
    store,
    delivery: commands,
    logger,
    signal: background.signal,
  });

  return {
    mqttPort: broker.port,
    async close() {
      background.abort();
      // The broker first: it waits for the uplinks in flight, which wait for their appends.
      await broker.close();
      await readings.close?.();
      await dispatcher;
      await commandDispatcher;
    },
  };
}

/** The names agents dial, from MQTT_PUBLIC_URL, for the broker's certificate (localhost is always there). */
function publicNames(publicUrl: string | undefined): { hostnames?: string[]; ipAddresses?: string[] } {
  if (!publicUrl) return {};
  const host = new URL(publicUrl).hostname.replace(/^\[|\]$/g, '');
  return isIP(host) ? { ipAddresses: [host] } : { hostnames: [host] };
}
