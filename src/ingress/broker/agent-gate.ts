import type {
  AedesOptions,
  AedesPublishPacket,
  AuthenticateError,
  Client,
  ConnectPacket,
  PublishPacket,
  Subscription,
} from 'aedes';
import type { Logger } from 'pino';
import { isDataError } from '../../infra/postgres/errors.js';
import { mayPublish, maySubscribe, type PublishDecision } from './acl.js';
import type { AgentDirectory, AgentRecord } from './agent-directory.js';
import { RejectedMessage } from '../rejected-message.js';
import type { Rejections } from './rejections.js';
import type { AgentSession, AgentSessions } from './sessions.js';
import {
  agentPrefix,
  agentStatusPayload,
  parseUplinkTopic,
  uplinkTopic,
  type UplinkTopic,
} from './topics.js';

/**
 * The agent connection a message came over: its id (sessions.ts), and `ended`, aborted when it closes. A
 * will published after its connection is gone (its broker node died) has no `ended`, and an id only if the
 * node that stored it named its connections.
 */
export interface UplinkConnection {
  readonly id: string | undefined;
  readonly ended?: AbortSignal;
}

export type UplinkHandler = (
  agent: AgentRecord,
  topic: UplinkTopic,
  payload: Buffer,
  connection: UplinkConnection,
) => Promise<void>;

/** A will as the broker stores it for its connection: stamped with the connection's id at authentication. */
interface StampedWill {
  connectionId?: unknown;
}

export interface GateOptions {
  readonly directory: AgentDirectory;
  readonly onUplink: UplinkHandler;
  /** The agent's connection `connectionId` ended here. */
  readonly onAgentOffline: (agentId: string, connectionId: string) => Promise<void>;
  readonly onAgentMovedAway?: (agentId: string) => void;
  readonly sessions: AgentSessions;
  readonly rejections: Rejections;
  readonly logger: Logger;
  /** Least time between two directory reads for one connection publishing for unknown devices. */
  readonly directoryRefreshMs: number;
}

// MQTT 3.1.1 CONNACK return codes (aedes declares them as an ambient const enum we cannot import).
const IDENTIFIER_REJECTED = 2 as AuthenticateError['returnCode'];
const SERVER_UNAVAILABLE = 3 as AuthenticateError['returnCode'];
const NOT_AUTHORIZED = 5 as AuthenticateError['returnCode'];

type ConnectIntent = Pick<ConnectPacket, 'clientId' | 'will'>;

/**
 * Everything the broker decides about an agent, as aedes hooks: who may connect, what it may publish
 * and subscribe, what it may receive, and the uplink handler run before the PUBACK.
 *
 * Durability: aedes writes a QoS 1 PUBACK after authorizePublish calls back and before anything else
 * runs, so the uplink handler is awaited inside authorizePublish. Its outcomes:
 * - resolves: callback(null), PUBACK, done;
 * - RejectedMessage, or a PostgreSQL data error outside readings: counted, logged, callback(null): PUBACK
 *   and drop (retrying cannot fix it);
 * - any other error: callback(error): aedes closes the connection without a PUBACK (MQTT-3.3.5-2),
 *   and the agent redelivers the message when it reconnects.
 * The handler may take its time (the readings quota holds a message back): the PUBACK waits with it, and
 * aedes reads nothing more from that connection until its current read batch is settled.
 * A message that authorizePublish lets through is still handed to aedes' router, so authorizeForward
 * makes sure nothing an agent publishes ever reaches another client.
 */
export class AgentGate {
  readonly #options: GateOptions;
  readonly #connectIntents = new WeakMap<Client, ConnectIntent>();
  // Offline handling in flight per agent: a new connection's messages wait for the old one's offline.
  readonly #offline = new Map<string, Promise<void>>();
  // Handler calls in flight, so shutdown can wait for them before the store behind them closes.
  readonly #inFlight = new Set<Promise<unknown>>();

  constructor(options: GateOptions) {
    this.#options = options;
  }

  hooks(): Pick<
    AedesOptions,
    'preConnect' | 'authenticate' | 'authorizePublish' | 'authorizeSubscribe' | 'authorizeForward'
  > {
    return {
      preConnect: (client, packet, callback) => {
        // authenticate() does not see the CONNECT packet; keep what it needs from it.
        this.#connectIntents.set(client, { clientId: packet.clientId, will: packet.will });
        callback(null, true);
      },
      authenticate: (client, _username, _password, done) => {
        this.#authenticate(client).then(
          () => done(null, true),
          (error: unknown) => done(asAuthenticateError(error), false),
        );
      },
      authorizePublish: (client, packet, callback) => {
        this.#track(this.#authorizePublish(client, packet)).then(
          () => callback(null),
          (error: unknown) => callback(error instanceof Error ? error : new Error(String(error))),
        );
      },
      authorizeSubscribe: (client, subscription, callback) => {
        callback(null, this.#authorizeSubscribe(client, subscription));
      },
      authorizeForward: (client, packet) => this.#authorizeForward(client, packet),
    };
  }

  /** Resolves once every uplink and offline handler already started has settled. */
  async settled(): Promise<void> {
    while (this.#inFlight.size > 0) {
      await Promise.allSettled([...this.#inFlight]);
    }
  }

  // Runs per publish: its callbacks are written inline, as tsx's esbuild gives every named function it
  // makes a name with defineProperty, which cost 1 % of the ingress thread's samples under load.
  #track<T>(work: Promise<T>): Promise<T> {
    this.#inFlight.add(work);
    work.then(
      () => this.#inFlight.delete(work),
      () => this.#inFlight.delete(work),
    );
    return work;
  }

  /** Called for a registered client whose connection ended, however it ended. */
  agentDisconnected(client: Client): void {
    // Its socket may have closed first (aedes awaits a shared session store before reporting the end).
    const session = this.#options.sessions.lastOf(client);
    if (!session) return;
    const { agentId } = session;
    // The node the agent moved to reports it; a late "offline" from here would undo its "online".
    if (session.movedAway) {
      this.#options.onAgentMovedAway?.(agentId);
      return;
    }
    const previous = this.#offline.get(agentId) ?? Promise.resolve();
    const current = previous
      .then(() => this.#options.onAgentOffline(agentId, session.connectionId))
      .catch((error: unknown) => {
        this.#options.logger.error({ err: error, agentId }, 'marking agent offline failed');
      });
    this.#offline.set(agentId, current);
    this.#track(current);
    void current.then(() => {
      if (this.#offline.get(agentId) === current) this.#offline.delete(agentId);
    });
  }

  async #authenticate(client: Client): Promise<void> {
    const { sessions, rejections, directory } = this.#options;
    const peer = sessions.peerOf(client.conn);
    const intent = this.#connectIntents.get(client);
    this.#connectIntents.delete(client);
    if (!peer || !intent) {
      rejections.report('certificate_invalid', undefined, 'connection without a verified agent certificate');
      throw refusal(NOT_AUTHORIZED, 'not authorized');
    }
    const { agentId } = peer;
    if (intent.clientId !== agentId) {
      rejections.report('client_id_mismatch', agentId, `client id ${JSON.stringify(intent.clientId)}`);
      throw refusal(IDENTIFIER_REJECTED, 'client id must equal the certificate agent id');
    }
    if (intent.will && !isOwnOfflineWill(agentId, intent.will)) {
      rejections.report('will_refused', agentId, `will on ${intent.will.topic}`);
      throw refusal(NOT_AUTHORIZED, 'the will must be {"state":"offline"} on the agent status topic');
    }

    const epoch = sessions.epoch(agentId);
    let agent: AgentRecord | undefined;
    try {
      agent = await directory.getAgent(agentId);
    } catch (error) {
      rejections.report('directory_unavailable', agentId, errorMessage(error));
      throw refusal(SERVER_UNAVAILABLE, 'agent directory unavailable');
    }
    if (!agent || agent.agentId !== agentId) {
      rejections.report('unknown_agent', agentId, 'not in the agent directory');
      throw refusal(NOT_AUTHORIZED, 'not authorized');
    }
    // A revoke that lands while the directory read is in flight must win too.
    if (agent.revoked || sessions.epoch(agentId) !== epoch) {
      rejections.report('revoked_agent', agentId, 'agent is revoked');
      throw refusal(NOT_AUTHORIZED, 'not authorized');
    }
    // Gone while we waited: its close has run already and would never release a session opened now.
    if (client.closed) throw refusal(NOT_AUTHORIZED, 'connection closed during authentication');
    const session = sessions.open(client, agent, peer.certificateNotAfter, () => {
      rejections.report('certificate_expired', agentId, 'certificate expired while connected');
      client.close();
    });
    // aedes stores the will after authentication (with every node when clustered), this very object: a
    // node that publishes it after this one died can tell which connection it speaks for.
    if (intent.will) (intent.will as StampedWill).connectionId = session.connectionId;
  }

  async #authorizePublish(client: Client | null, packet: PublishPacket): Promise<void> {
    // aedes publishes a will from close(), after marking the client closed. The disconnect handler
    // reports the agent offline already; refusing here keeps the will off the router.
    if (client?.closed) throw new Error('will handled as an agent disconnect');
    // A stored will of a node that died comes with the agent's live client when the agent has reconnected
    // to this node since: it still speaks only for the connection that stored it.
    const stamped = (packet as StampedWill).connectionId;
    if (client === null || typeof stamped === 'string')
      return this.#orphanWill(packet, typeof stamped === 'string' ? stamped : undefined);

    // A connection already destroyed (oversized packet, revoke) may still have packets parsed from its
    // last read; they can never be acknowledged, so they must not be handled either.
    if (client.conn.destroyed) throw new Error('connection already closed');
    const session = this.#options.sessions.get(client);
    if (!session) throw new Error('publish before authentication');
    // Nothing an agent publishes is kept for later subscribers.
    packet.retain = false;

    let decision = mayPublish(session.grant, packet.topic);
    if (!decision.allowed && decision.reason === 'foreign_device') {
      decision = await this.#recheckWithFreshRecord(session, packet.topic, decision);
    }
    if (!decision.allowed) {
      this.#options.rejections.report(
        'publish_denied',
        session.agentId,
        `${decision.reason}: ${packet.topic}`,
      );
      if (decision.reason === 'foreign_subtree' || decision.reason === 'wildcard') {
        throw new Error(`publish outside the agent's subtree: ${decision.reason}`);
      }
      // Inside its own subtree (a device no longer its own, its downlink topics): acknowledge and drop,
      // so a stale message cannot put the agent into a reconnect-and-redeliver loop.
      return;
    }

    const pendingOffline = this.#offline.get(session.agentId);
    if (pendingOffline) await pendingOffline;
    const payload = Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload);
    try {
      await this.#options.onUplink(session.agent, decision.topic, payload, {
        id: session.connectionId,
        ended: session.ended.signal,
      });
    } catch (error) {
      // The connection ended while the handler waited (a readings quota): no PUBACK was possible anyway.
      if (session.ended.signal.aborted && isAbort(error)) throw error;
      const final = finalRejection(error, decision.topic);
      if (final) {
        this.#options.rejections.report(
          'payload_rejected',
          session.agentId,
          `${final.reason}: ${packet.topic}: ${final.message}`,
        );
        return;
      }
      this.#options.rejections.report(
        'uplink_failed',
        session.agentId,
        `${packet.topic}: ${errorMessage(error)}`,
      );
      throw error;
    }
  }

  /**
   * Re-reads the agent's record for its live connections. The adoption flow calls it before it tells
   * the agent about a new device, so the agent's first reading for that device is not refused.
   */
  async refreshAgent(agentId: string): Promise<void> {
    await Promise.all(this.#options.sessions.of(agentId).map((session) => this.#refresh(session)));
  }

  /**
   * A publish for a device the session does not know may be for a device adopted since the record was
   * read. Re-read it, at most once per refresh interval per connection, so a flood of foreign publishes
   * stays cheap. A directory failure is infrastructure: the message is not acknowledged.
   */
  async #recheckWithFreshRecord(
    session: AgentSession,
    topic: string,
    decision: PublishDecision,
  ): Promise<PublishDecision> {
    if (!session.refreshing) {
      if (Date.now() - session.missRefreshedAt < this.#options.directoryRefreshMs) return decision;
      session.missRefreshedAt = Date.now();
    }
    try {
      await this.#refresh(session);
    } catch (error) {
      this.#options.rejections.report('directory_unavailable', session.agentId, errorMessage(error));
      throw error;
    }
    return mayPublish(session.grant, topic);
  }

  /** One directory read per session at a time; concurrent callers share it. */
  #refresh(session: AgentSession): Promise<void> {
    session.refreshing ??= this.#options.directory
      .getAgent(session.agentId)
      .then((agent) => {
        if (!agent || agent.revoked) {
          this.#options.rejections.report('revoked_agent', session.agentId, 'revoked while connected');
          session.client.close();
          throw new Error('agent revoked');
        }
        this.#options.sessions.update(session, agent);
      })
      .finally(() => {
        session.refreshing = undefined;
      });
    return session.refreshing;
  }

  /**
   * A will left behind by a broker instance that died, published by a surviving one (aedes calls this
   * with no client). Only the agent status will is ever stored, so anything else is refused.
   */
  async #orphanWill(packet: PublishPacket, connectionId: string | undefined): Promise<void> {
    const topic = parseUplinkTopic(packet.topic);
    if (!topic || topic.kind !== 'agentStatus') throw new Error('unexpected will');
    const agent = await this.#options.directory.getAgent(topic.agentId);
    if (!agent) throw new Error('will of an unknown agent');
    const payload = Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload);
    await this.#options.onUplink(agent, topic, payload, { id: connectionId });
  }

  #authorizeSubscribe(client: Client, subscription: Subscription): Subscription | null {
    const session = this.#options.sessions.get(client);
    if (session && maySubscribe(session.grant, subscription.topic)) return subscription;
    this.#options.rejections.report('subscribe_denied', session?.agentId ?? client.id, subscription.topic);
    // A null subscription is aedes' way to answer 0x80 (failure) for this filter and keep the connection.
    return null;
  }

  #authorizeForward(client: Client, packet: AedesPublishPacket): AedesPublishPacket | null {
    // Agents only ever receive what the cloud published on their own downlink subtree. The cloud
    // publishes without a client; anything carrying a client id came from an agent.
    if ((packet as { clientId?: string }).clientId !== undefined) return null;
    const session = this.#options.sessions.get(client);
    if (!session || !packet.topic.startsWith(`${agentPrefix(session.agentId)}down/`)) return null;
    return packet;
  }
}

/**
 * A failure that redelivery cannot fix: the handler's RejectedMessage, or PostgreSQL refusing the values
 * themselves (SQLSTATE class 22, e.g. a NUL the payload schemas missed). Not for readings: they are appended
 * in batches with other agents' messages, so a data error there need not be this message's, and dropping
 * it could lose good readings; the readings schema refuses what PostgreSQL cannot store instead.
 */
function finalRejection(error: unknown, topic: UplinkTopic): { reason: string; message: string } | undefined {
  if (error instanceof RejectedMessage) return error;
  if (topic.kind !== 'readings' && isDataError(error))
    return { reason: 'data_error', message: errorMessage(error) };
  return undefined;
}

function isOwnOfflineWill(agentId: string, will: NonNullable<ConnectPacket['will']>): boolean {
  if (will.topic !== uplinkTopic.agentStatus(agentId)) return false;
  try {
    const raw = will.payload;
    const text = typeof raw === 'string' ? raw : Buffer.from(raw).toString('utf8');
    const parsed = agentStatusPayload.safeParse(JSON.parse(text));
    return parsed.success && parsed.data.state === 'offline';
  } catch {
    return false;
  }
}

function refusal(returnCode: AuthenticateError['returnCode'], message: string): AuthenticateError {
  return Object.assign(new Error(message), { returnCode });
}

function asAuthenticateError(error: unknown): AuthenticateError {
  if (error instanceof Error && 'returnCode' in error) return error as AuthenticateError;
  return refusal(SERVER_UNAVAILABLE, errorMessage(error));
}

function isAbort(error: unknown): boolean {
  return error instanceof Error && error.name === 'AbortError';
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
