import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type { Client } from 'aedes';
import type { AgentGrant } from './acl.js';
import type { AgentRecord } from './agent-directory.js';

/** Who is at the other end of a TLS connection, read from its verified client certificate. */
export interface PeerIdentity {
  readonly agentId: string;
  /** Epoch ms of the certificate's notAfter. */
  readonly certificateNotAfter: number;
}

export interface AgentSession {
  readonly client: Client;
  readonly agentId: string;
  agent: AgentRecord;
  grant: AgentGrant;
  /** When a publish for an unknown device last caused a directory read. */
  missRefreshedAt: number;
  refreshing: Promise<void> | undefined;
  expiryTimer: NodeJS.Timeout | undefined;
  /** Aborted when the connection ends: work done for it that can no longer be acknowledged may stop. */
  readonly ended: AbortController;
  /** The agent connected to another broker node, which closes this connection: it is not going offline. */
  movedAway: boolean;
  /** Names this connection in the connectivity it records, across every broker node (connectivity.ts). */
  readonly connectionId: string;
}

// setTimeout cannot wait longer than this (about 24.8 days); longer waits are re-armed.
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The authenticated connections, by aedes client and by agent. A session opens when authentication
 * succeeds (before aedes registers the client) and is released when the connection closes, so a revoke
 * can find a connection at any point after it was let in.
 */
export class AgentSessions {
  readonly #peers = new WeakMap<object, PeerIdentity>();
  readonly #byClient = new WeakMap<Client, AgentSession>();
  readonly #released = new WeakMap<Client, AgentSession>();
  readonly #byAgent = new Map<string, Set<AgentSession>>();
  readonly #epochs = new Map<string, number>();

  identify(connection: object, identity: PeerIdentity): void {
    this.#peers.set(connection, identity);
  }

  peerOf(connection: object): PeerIdentity | undefined {
    return this.#peers.get(connection);
  }

  /** Changes whenever the agent is disconnected on purpose; an authentication that straddles it fails. */
  epoch(agentId: string): number {
    return this.#epochs.get(agentId) ?? 0;
  }

  /** Bumps the agent's epoch and returns its open sessions, for the caller to close. */
  invalidate(agentId: string): AgentSession[] {
    this.#epochs.set(agentId, this.epoch(agentId) + 1);
    return this.of(agentId);
  }

  open(
    client: Client,
    agent: AgentRecord,
    certificateNotAfter: number,
    onCertificateExpired: () => void,
  ): AgentSession {
    const session: AgentSession = {
      client,
      agentId: agent.agentId,
      agent,
      grant: grantOf(agent),
      missRefreshedAt: Number.NEGATIVE_INFINITY,
      refreshing: undefined,
      expiryTimer: undefined,
      ended: endedSignal(),
      movedAway: false,
      connectionId: randomUUID(),
    };
    this.#byClient.set(client, session);
    let sessions = this.#byAgent.get(agent.agentId);
    if (!sessions) {
      sessions = new Set();
      this.#byAgent.set(agent.agentId, sessions);
    }
    sessions.add(session);
    // TLS only checks validity at the handshake; a connection must not outlive its certificate.
    const arm = () => {
      const wait = certificateNotAfter - Date.now();
      if (wait <= 0) {
        session.expiryTimer = undefined;
        onCertificateExpired();
        return;
      }
      session.expiryTimer = setTimeout(arm, Math.min(wait, MAX_TIMER_MS));
      session.expiryTimer.unref();
    };
    arm();
    return session;
  }

  get(client: Client): AgentSession | undefined {
    return this.#byClient.get(client);
  }

  /** The client's session, open or already released: who it was, once the connection has ended. */
  lastOf(client: Client): AgentSession | undefined {
    return this.#byClient.get(client) ?? this.#released.get(client);
  }

  /** Agents with at least one open session. */
  get agentCount(): number {
    return this.#byAgent.size;
  }

  /** Open sessions of an agent. */
  of(agentId: string): AgentSession[] {
    return [...(this.#byAgent.get(agentId) ?? [])];
  }

  update(session: AgentSession, agent: AgentRecord): void {
    session.agent = agent;
    session.grant = grantOf(agent);
  }

  release(client: Client): AgentSession | undefined {
    const session = this.#byClient.get(client);
    if (!session) return undefined;
    this.#byClient.delete(client);
    this.#released.set(client, session);
    clearTimeout(session.expiryTimer);
    session.ended.abort();
    const sessions = this.#byAgent.get(session.agentId);
    sessions?.delete(session);
    if (sessions?.size === 0) this.#byAgent.delete(session.agentId);
    return session;
  }

  /** Stops every certificate-expiry timer and ends every session, for shutdown. */
  releaseAll(): void {
    for (const sessions of this.#byAgent.values()) {
      for (const session of sessions) {
        clearTimeout(session.expiryTimer);
        session.ended.abort();
      }
    }
    this.#byAgent.clear();
  }
}

/** Every message held back on the connection listens to it; as many as one read batch brings. */
function endedSignal(): AbortController {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  return controller;
}

function grantOf(agent: AgentRecord): AgentGrant {
  // The hub is one of the agent's devices even if a directory forgets to list it.
  const deviceIds = agent.deviceIds.has(agent.hubId)
    ? agent.deviceIds
    : new Set([...agent.deviceIds, agent.hubId]);
  return { agentId: agent.agentId, deviceIds };
}
