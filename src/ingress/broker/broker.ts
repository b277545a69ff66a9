import { randomUUID } from 'node:crypto';
import type { AddressInfo, Socket } from 'node:net';
import tls from 'node:tls';
import { Aedes, type Client } from 'aedes';
import type { Logger } from 'pino';
import { agentIdFromCertificate, isAgentId } from '../pki/agent-identity.js';
import type { AgentDirectory } from './agent-directory.js';
import { withDeadline } from '../../infra/redis/connect.js';
import { openClusterBackplane, type BrokerCluster, type ClusterBackplane } from './cluster-backplane.js';
import { AgentGate, type UplinkHandler } from './agent-gate.js';
import { guardPacketSize } from './packet-size-guard.js';
import { Rejections, type RejectionReason } from './rejections.js';
import { AgentSessions } from './sessions.js';
import { downlinkTopic, encodeDownlink, type DownlinkKind, type DownlinkPayloads } from './topics.js';

export interface BrokerOptions {
  /** Interface to listen on; default all. */
  readonly host?: string;
  /** 0 picks a free port (tests). */
  readonly port: number;
  /** PEM strings: the broker's server certificate and key, and the edge CA that signs agents. */
  readonly tls: { readonly key: string; readonly cert: string; readonly ca: string };
  /** Largest MQTT packet accepted, fixed header included; a larger one closes the connection. */
  readonly maxPacketBytes: number;
  readonly directory: AgentDirectory;
  /** Runs before the PUBACK; see AgentGate for what its outcomes mean. */
  readonly onUplink: UplinkHandler;
  /** A registered agent connection ended (clean disconnect, network loss, revoke, expiry). */
  readonly onAgentOffline: (agentId: string, connectionId: string) => Promise<void>;
  /** The agent's connection here was taken over by one on another broker node: it is not offline. */
  readonly onAgentMovedAway?: (agentId: string) => void;
  /** Metrics hook: every refusal, unthrottled. */
  readonly onRejected?: (reason: RejectionReason, agentId: string | undefined) => void;
  readonly logger: Logger;
  /** Default 10 s: TLS handshake and MQTT CONNECT must each arrive within it. */
  readonly connectTimeoutMs?: number;
  /** Default 1 s. */
  readonly directoryRefreshMs?: number;
  /** Default 60 s. */
  readonly rejectionLogWindowMs?: number;
  /** Several broker nodes behind one load balancer share sessions and routing through Redis; unset: alone. */
  readonly cluster?: BrokerCluster;
}

export interface RunningBroker {
  readonly port: number;
  /**
   * Publishes to an agent on `dc/v1/agents/<id>/down/<kind>` at QoS 1, if this node holds the agent's
   * connection: every node follows the store, and only the one the agent is connected to may speak, or a
   * clustered agent would hear each downlink once per node. Resolves once routed, not delivered.
   */
  publishDown<K extends DownlinkKind>(agentId: string, kind: K, payload: DownlinkPayloads[K]): Promise<void>;
  /**
   * Re-reads the agent from the directory for its live connections (after an adoption, before telling
   * the agent about the new device). A revoked or vanished agent is disconnected.
   */
  refreshAgent(agentId: string): Promise<void>;
  /** True while this broker node holds an authenticated connection of the agent. */
  holdsAgent(agentId: string): boolean;
  /** Agents with an authenticated connection to this node now (for /metrics). */
  readonly connectedAgents: number;
  /** Closes the agent's live connections and fails any authentication in flight. True if one was open. */
  disconnectAgent(agentId: string): Promise<boolean>;
  /**
   * Stops listening, closes every connection (each agent is reported offline) and resolves once the
   * handlers already started have settled.
   */
  close(): Promise<void>;
}

// How long a clustered node's close waits for Redis before it lets go of it.
const CLUSTER_CLOSE_MS = 1000;

// aedes refuses these before authorizePublish and closes the connection; they are still refusals to count.
const PUBLISH_VIOLATION = /is not allowed in PUBLISH|empty topic|too many levels/;

export async function startBroker(options: BrokerOptions): Promise<RunningBroker> {
  if (!Number.isInteger(options.maxPacketBytes) || options.maxPacketBytes < 64) {
    throw new RangeError('maxPacketBytes must be an integer of at least 64');
  }
  const logger = options.logger.child({ component: 'mqtt-broker' });
  const connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  const sessions = new AgentSessions();
  const rejections = new Rejections({
    logger,
    onRejected: options.onRejected,
    windowMs: options.rejectionLogWindowMs,
  });
  const gate = new AgentGate({
    directory: options.directory,
    onUplink: options.onUplink,
    onAgentOffline: options.onAgentOffline,
    onAgentMovedAway: options.onAgentMovedAway,
    sessions,
    rejections,
    logger,
    directoryRefreshMs: options.directoryRefreshMs ?? 1000,
  });

  const id = randomUUID();
  const backplane = options.cluster ? await openClusterBackplane(options.cluster, logger) : undefined;
  let registered: Readonly<Record<string, Client>> = {};
  if (backplane) followTakeovers(backplane, id, (agentId) => registered[agentId], sessions);
  const aedes = await Aedes.createBroker({
    id,
    ...gate.hooks(),
    connectTimeout: connectTimeoutMs,
    ...(backplane
      ? {
          mq: backplane.mq,
          persistence: backplane.persistence,
          heartbeatInterval: options.cluster!.heartbeatMs ?? 5000,
        }
      : {}),
  }).catch(async (error: unknown) => {
    await backplane?.destroy();
    throw error;
  });
  // Not in aedes's types: the connections it has registered, by client id (the one it would close).
  registered = (aedes as unknown as { clients: Record<string, Client> }).clients;
  // Without a listener an 'error' event (persistence, will sweep) would crash the process.
  (aedes as NodeJS.EventEmitter).on('error', (error: Error) =>
    logger.error({ err: error }, 'mqtt broker error'),
  );
  aedes.on('clientDisconnect', (client) => gate.agentDisconnected(client));
  aedes.on('clientError', (client, error) => {
    if (PUBLISH_VIOLATION.test(error.message)) {
      rejections.report('publish_denied', client.id, error.message);
    } else {
      logger.debug({ agentId: client.id, err: error }, 'mqtt client error');
    }
  });
  aedes.on('connectionError', (_client, error) => logger.debug({ err: error }, 'mqtt connection error'));

  const server = tls.createServer({
    key: options.tls.key,
    cert: options.tls.cert,
    ca: options.tls.ca,
    requestCert: true,
    rejectUnauthorized: true,
    minVersion: 'TLSv1.2',
    handshakeTimeout: connectTimeoutMs,
  });
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('tlsClientError', (error: Error) => {
    rejections.report('tls_handshake', undefined, error.message);
  });
  server.on('secureConnection', (socket: tls.TLSSocket) => {
    const certificate = socket.getPeerCertificate();
    const agentId = socket.authorized ? agentIdFromCertificate(certificate) : undefined;
    const certificateNotAfter = Date.parse(certificate.valid_to);
    if (agentId === undefined || !Number.isFinite(certificateNotAfter)) {
      rejections.report('certificate_invalid', undefined, `certificate subject ${certificate.subject?.CN}`);
      socket.destroy();
      return;
    }
    // An agent with MQTT keepalive 0 on a half-open TCP connection would otherwise look online forever.
    socket.setKeepAlive(true, 60_000);
    // A PUBACK or a command is one small packet: Nagle's algorithm would hold it until the agent's delayed
    // ACK of the previous one (up to 40 ms on Linux).
    socket.setNoDelay(true);
    sessions.identify(socket, { agentId, certificateNotAfter });
    const client: Client = aedes.handle(socket);
    guardPacketSize(socket, options.maxPacketBytes, (size) => {
      rejections.report('packet_too_large', agentId, `${size} bytes > ${options.maxPacketBytes}`);
      socket.destroy();
    });
    socket.once('close', () => sessions.release(client));
  });

  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port, options.host ?? '0.0.0.0', () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    await new Promise<void>((resolve) => aedes.close(() => resolve()));
    await backplane?.destroy();
    throw error;
  }
  server.on('error', (error) => logger.error({ err: error }, 'mqtt listener error'));
  const { port } = server.address() as AddressInfo;
  logger.info(
    { port, maxPacketBytes: options.maxPacketBytes, clustered: backplane !== undefined, brokerId: id },
    'mqtt broker listening (mTLS)',
  );

  const holdsAgent = (agentId: string) => sessions.of(agentId).some((session) => !session.client.closed);
  let closing: Promise<void> | undefined;
  return {
    port,

    publishDown(agentId, kind, payload) {
      if (!isAgentId(agentId)) return Promise.reject(new RangeError(`not an agent id: ${agentId}`));
      if (!holdsAgent(agentId)) return Promise.resolve();
      const packet = {
        cmd: 'publish' as const,
        topic: downlinkTopic(agentId, kind),
        payload: encodeDownlink(kind, payload),
        qos: 1 as const,
        retain: false,
        dup: false,
      };
      return new Promise((resolve, reject) => {
        aedes.publish(packet, (error) => (error ? reject(error) : resolve()));
      });
    },

    refreshAgent(agentId) {
      return gate.refreshAgent(agentId);
    },

    holdsAgent,

    get connectedAgents() {
      return sessions.agentCount;
    },

    async disconnectAgent(agentId) {
      const open = sessions.invalidate(agentId);
      await Promise.all(open.map((session) => new Promise<void>((resolve) => session.client.close(resolve))));
      return open.length > 0;
    },

    close() {
      closing ??= (async () => {
        const listenerClosed = new Promise<void>((resolve) => server.close(() => resolve()));
        const aedesClosed = new Promise<void>((resolve) => aedes.close(() => resolve()));
        if (backplane) {
          // Each connection's goodbye goes through Redis; with Redis gone it would wait for ever. Past the
          // deadline the Redis connections are dropped, which fails those waits and lets aedes finish.
          await withDeadline(aedesClosed, CLUSTER_CLOSE_MS).catch(() => undefined);
          await backplane.destroy();
          await withDeadline(aedesClosed, CLUSTER_CLOSE_MS).catch(() => {
            logger.warn('broker closed without Redis: some connections ended without their cleanup');
          });
        } else {
          await aedesClosed;
        }
        // Connections still in the TLS handshake are not aedes clients yet.
        for (const socket of sockets) socket.destroy();
        sessions.releaseAll();
        // Closing reports every connected agent offline; let that and any uplink in flight finish
        // before the caller closes the store behind the handlers.
        await gate.settled();
        await listenerClosed;
      })();
      return closing;
    },
  };
}

/**
 * aedes announces every new connection on `$SYS/<broker id>/new/clients`, and each node closes the
 * connection it has registered under that client id. Registered before aedes's own listener, this marks
 * that very connection as moved away first, so its close does not report the agent offline. A connection
 * still authenticating here is not the one aedes closes, and is left as it is.
 */
function followTakeovers(
  backplane: ClusterBackplane,
  ownId: string,
  registeredClient: (agentId: string) => Client | undefined,
  sessions: AgentSessions,
): void {
  backplane.mq.on('$SYS/+/new/clients', (message, done) => {
    const announcedBy = message.topic.split('/')[1];
    const client = announcedBy === ownId ? undefined : registeredClient(String(message.payload));
    const session = client && sessions.lastOf(client);
    if (session) session.movedAway = true;
    done();
  });
}
