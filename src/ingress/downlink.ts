import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { AgentEvent } from '../domain/agents/index.js';
import type { PairingEvent } from '../domain/pairing/index.js';
import type { EventStore, RecordedEvent } from '../eventstore/port.js';
import type { Pool } from '../infra/postgres/pool.js';
import { findAgent, findAgentOfHub, type AgentRow } from '../projections/agents/queries.js';
import { followStoreFromHead } from './follow-store.js';
import { waitUntilCaughtUp } from '../projections/catch-up.js';
import { PAIRING_PROJECTOR_NAME, pairingProjector } from '../projections/pairing/projector.js';
import { findOpenSessionOfHub, listHubDecisions } from '../projections/pairing/queries.js';
import type { AgentRecord } from './broker/agent-directory.js';
import type { RunningBroker } from './broker/broker.js';

type Broker = Pick<RunningBroker, 'publishDown' | 'refreshAgent' | 'disconnectAgent'>;

const DOWNLINK_EVENT_TYPES = [
  'PairingWindowOpened',
  'PairingWindowClosed',
  'CandidateJoined',
  'CandidateAdopted',
  'CandidateRejected',
  'AgentRevoked',
] as const;

/** The pairing read model the resend reads, and how long it waits for it to catch up. */
const PAIRING_PROJECTION = { name: PAIRING_PROJECTOR_NAME, eventTypes: pairingProjector().eventTypes };
const RESEND_WAIT_MS = 10_000;

/** How long the dispatcher waits for the agents read model to show an adoption or a revoke. */
const READ_MODEL_WAIT_MS = 10_000;
const READ_MODEL_POLL_MS = 25;

export interface EdgeDispatcherOptions {
  readonly store: EventStore;
  readonly pool: Pool;
  readonly broker: Broker;
  readonly logger: Logger;
  readonly signal: AbortSignal;
}

/**
 * The cloud's half of the downlink contract, on the ingress side. It follows the event store from its
 * head, whoever appended (an API process, the scheduler, the CLI), and tells the agents connected to this
 * broker what concerns them: windows opened and closed (down/pairing), candidates adopted or refused
 * (down/devices). It also closes the connections of a revoked agent. An agent connected elsewhere is not
 * here to hear it; what it missed is sent again when it reports online (`resend`).
 */
export async function runEdgeDispatcher(options: EdgeDispatcherOptions): Promise<void> {
  const logger = options.logger.child({ component: 'edge-dispatcher' });
  await followStoreFromHead({
    store: options.store,
    eventTypes: DOWNLINK_EVENT_TYPES,
    signal: options.signal,
    logger,
    async onBatch(events) {
      for (const event of events) {
        await dispatch(options, event).catch((error: unknown) =>
          logger.error({ err: error, eventType: event.type, position: event.position }, 'downlink failed'),
        );
      }
    },
  });
}

async function dispatch(options: EdgeDispatcherOptions, recorded: RecordedEvent): Promise<void> {
  const { broker, pool } = options;
  const event = { type: recorded.type, data: recorded.data } as
    PairingEvent | Extract<AgentEvent, { type: 'AgentRevoked' }>;
  if (event.type === 'AgentRevoked') {
    // Closing before the read model shows the revoke would let the agent straight back in.
    await untilAgent(
      () => findAgent(pool, event.data.agentId),
      (a) => a.revoked,
    );
    await broker.disconnectAgent(event.data.agentId);
    return;
  }
  if (event.type === 'CandidateRejectionCleared') return;
  const agent = await findAgentOfHub(pool, event.data.hubId);
  if (!agent || agent.revoked) return;
  const { sessionId, hubId } = event.data;
  switch (event.type) {
    case 'PairingWindowOpened':
      return broker.publishDown(agent.agentId, 'pairing', {
        action: 'permit',
        sessionId,
        hubId,
        until: event.data.closesAt,
      });
    case 'PairingWindowClosed':
      return broker.publishDown(agent.agentId, 'pairing', { action: 'stop', sessionId, hubId });
    case 'CandidateAdopted': {
      // The broker must know the device is the agent's before the agent publishes for it.
      const { deviceId } = event.data;
      await untilAgent(
        () => findAgentOfHub(pool, hubId),
        (a) => a.deviceIds.includes(deviceId),
      );
      await broker.refreshAgent(agent.agentId);
      return broker.publishDown(agent.agentId, 'devices', {
        decision: 'adopted',
        sessionId,
        ieeeAddr: event.data.ieeeAddr,
        publicId: deviceId,
      });
    }
    case 'CandidateJoined':
      // A remembered rejection joining again is told again, so its agent stops offering it.
      if (event.data.state !== 'rejected') return;
      return broker.publishDown(agent.agentId, 'devices', {
        decision: 'rejected',
        sessionId,
        ieeeAddr: event.data.ieeeAddr,
      });
    case 'CandidateRejected':
      return broker.publishDown(agent.agentId, 'devices', {
        decision: 'rejected',
        sessionId,
        ieeeAddr: event.data.ieeeAddr,
      });
  }
}

/**
 * Sends again what a (re)connected agent needs: the hub's open window, every device adopted through it and
 * every address it refuses. Downlink messages are idempotent for the agent, so a repeat does no harm.
 * They come from the pairing read model, so it is first given up to RESEND_WAIT_MS to hold every pairing
 * event already recorded: an agent that connects while that projection is behind (a projector process
 * starting, a busy one) would otherwise learn only part of its devices, and nothing more until it
 * reconnected. Past the wait it gets what the read model has, and a warning is logged.
 */
export async function resendToAgent(
  pool: Pool,
  store: EventStore,
  broker: Broker,
  agent: AgentRecord,
  now: Date,
  logger?: Pick<Logger, 'warn'>,
): Promise<void> {
  if (!(await waitUntilCaughtUp(pool, store, PAIRING_PROJECTION, RESEND_WAIT_MS)))
    logger?.warn({ agentId: agent.agentId }, 'pairing read model behind: resending what it holds');
  const open = await findOpenSessionOfHub(pool, agent.hubId);
  if (open && open.closesAt > now) {
    await broker.publishDown(agent.agentId, 'pairing', {
      action: 'permit',
      sessionId: open.sessionId,
      hubId: agent.hubId,
      until: open.closesAt.toISOString(),
    });
  }
  const { adopted, rejected } = await listHubDecisions(pool, agent.hubId);
  for (const c of adopted) {
    await broker.publishDown(agent.agentId, 'devices', {
      decision: 'adopted',
      sessionId: c.sessionId,
      ieeeAddr: c.ieeeAddr,
      publicId: c.deviceId!,
    });
  }
  for (const r of rejected) {
    await broker.publishDown(agent.agentId, 'devices', {
      decision: 'rejected',
      sessionId: r.sessionId,
      ieeeAddr: r.ieeeAddr,
    });
  }
}

async function untilAgent(
  read: () => Promise<AgentRow | undefined>,
  ready: (agent: AgentRow) => boolean,
): Promise<void> {
  const deadline = Date.now() + READ_MODEL_WAIT_MS;
  for (;;) {
    const agent = await read();
    if ((agent && ready(agent)) || Date.now() >= deadline) return;
    await sleep(READ_MODEL_POLL_MS);
  }
}
