import type { Logger } from 'pino';
import { InvalidInput } from '../domain/errors.js';
import { canonicalIeeeAddr, type JoinOutcome } from '../domain/pairing/index.js';
import type { EventStore } from '../eventstore/port.js';
import { joinCandidate } from '../pairing/candidates.js';
import type { AgentDirectory, AgentRecord } from './broker/agent-directory.js';
import type { UplinkConnection, UplinkHandler } from './broker/agent-gate.js';
import { RejectedMessage } from './rejected-message.js';
import { parseUplinkPayload, type UplinkPayloads } from './broker/topics.js';
import type { ConnectivityRecorder } from './connectivity.js';

/** Commands (CommandDelivery): acks resolve once the outcome is durable; an agent gone gets nothing sent. */
interface CommandUplinkPort {
  /** `connection` aborted: the ack can no longer be acknowledged, and need not wait for its quota. */
  ack(
    agent: AgentRecord,
    commandId: string,
    ack: UplinkPayloads['commandAck'],
    connection?: AbortSignal,
  ): Promise<void>;
  agentOffline(agentId: string): void;
}

/**
 * Where readings go, parsed here once: resolves once they are durable; throws RejectedMessage for readings
 * never to be stored. `payload` is the message's bytes as published (a message without seq is named by them).
 */
export interface ReadingsPort {
  /** `connection` aborted: the message can no longer be acknowledged, and need not be stored. */
  ingest(
    agent: AgentRecord,
    deviceId: string,
    message: UplinkPayloads['readings'],
    payload: Buffer,
    connection?: AbortSignal,
  ): Promise<void>;
}

export interface UplinkDependencies {
  readonly store: EventStore;
  readonly directory: AgentDirectory;
  readonly readings: ReadingsPort;
  readonly commands: CommandUplinkPort;
  readonly connectivity: ConnectivityRecorder;
  /** An agent said it is online: it has subscribed and wants what it may have missed (downlink resend). */
  readonly onAgentOnline: (agent: AgentRecord) => void;
  /** A candidate join that recorded nothing, for the metrics. */
  readonly onJoinIgnored: (reason: Exclude<JoinOutcome, 'joined' | 'joined_rejected'>) => void;
  readonly logger: Logger;
  readonly now?: () => Date;
}

/**
 * The broker's uplink handler and offline hook: what each uplink topic records. Everything here runs before
 * the PUBACK (see broker/agent-gate.ts), so it resolves only once what it records is durable.
 */
export function uplinkDispatch(deps: UplinkDependencies): {
  onUplink: UplinkHandler;
  onAgentOffline: (agentId: string, connectionId: string) => Promise<void>;
} {
  const now = deps.now ?? (() => new Date());
  const logger = deps.logger.child({ component: 'uplink' });

  /**
   * The agent's connection `connectionId` ended: closed here, or its will published after its node died.
   * Nothing changes if the agent is online through a newer connection since (ConnectivityRecorder).
   */
  const connectionEnded = async (agent: AgentRecord, connection: UplinkConnection) => {
    const hub = { hubId: agent.hubId, connectionId: connection.id };
    // A connection of this node is gone from it whatever the fence says: this node sends it nothing more.
    if (connection.ended) deps.commands.agentOffline(agent.agentId);
    const at = now();
    if (
      !(await deps.connectivity.record(agent.projectId, [agent.hubId], 'offline', 'agent_offline', at, hub))
    ) {
      logger.info(
        { agentId: agent.agentId },
        'the end of an older connection ignored: the agent is online again',
      );
      return;
    }
    deps.commands.agentOffline(agent.agentId);
    // The devices may be fine; the cloud just cannot reach them while their agent is away.
    await deps.connectivity.record(agent.projectId, children(agent), 'unreachable', 'agent_offline', at, hub);
  };

  const onUplink: UplinkHandler = async (agent, topic, payload, connection) => {
    switch (topic.kind) {
      case 'readings':
        return deps.readings.ingest(
          agent,
          topic.deviceId,
          parseUplinkPayload(topic, payload).payload,
          payload,
          connection.ended,
        );
      case 'deviceStatus': {
        const status = parseUplinkPayload(topic, payload).payload;
        await deps.connectivity.record(
          agent.projectId,
          [topic.deviceId],
          status.state,
          'device_reported',
          now(),
        );
        return;
      }
      case 'agentStatus': {
        const status = parseUplinkPayload(topic, payload).payload;
        if (status.state === 'offline') {
          await connectionEnded(agent, connection);
          return;
        }
        await deps.connectivity.record(
          agent.projectId,
          [agent.hubId, ...children(agent)],
          'online',
          'agent_connected',
          now(),
          { hubId: agent.hubId, connectionId: connection.id },
        );
        deps.onAgentOnline(agent);
        return;
      }
      case 'pairingCandidate': {
        const candidate = parseUplinkPayload(topic, payload).payload;
        let outcome: JoinOutcome;
        try {
          outcome = await joinCandidate(deps.store, {
            hubId: agent.hubId,
            sessionId: candidate.sessionId,
            ieeeAddr: canonicalIeeeAddr(candidate.ieeeAddr),
            manufacturer: candidate.manufacturer,
            productModel: candidate.model,
            capabilities: candidate.capabilities,
            now: now(),
          });
        } catch (error) {
          if (error instanceof InvalidInput) throw new RejectedMessage('invalid_candidate', error.message);
          throw error;
        }
        if (outcome !== 'joined' && outcome !== 'joined_rejected') {
          deps.onJoinIgnored(outcome);
          logger.debug(
            { agentId: agent.agentId, sessionId: candidate.sessionId, outcome },
            'candidate ignored',
          );
        }
        return;
      }
      case 'commandAck':
        return deps.commands.ack(
          agent,
          topic.commandId,
          parseUplinkPayload(topic, payload).payload,
          connection.ended,
        );
    }
  };

  return {
    onUplink,
    async onAgentOffline(agentId, connectionId) {
      deps.commands.agentOffline(agentId);
      const agent = await deps.directory.getAgent(agentId);
      // The connection closed here, so it has ended already.
      if (agent) await connectionEnded(agent, { id: connectionId, ended: AbortSignal.abort() });
    },
  };
}

function children(agent: AgentRecord): string[] {
  return [...agent.deviceIds].filter((id) => id !== agent.hubId);
}
