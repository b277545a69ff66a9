import type { Logger } from 'pino';
import {
  decideAck,
  type AckDropReason,
  type AgentAck,
  decideRedelivery,
  decideSend,
  type CommandToApply,
  type SendDecision,
} from '../../domain/control/delivery-decisions.js';
import { controlFolding, type ControlEvent, type DeviceControlState } from '../../domain/control/index.js';
import { deviceStreamName } from '../../domain/devices/decider.js';
import { decideOnStream } from '../../eventstore/handle-command.js';
import type { EventStore } from '../../eventstore/port.js';
import type { CommandMetrics } from '../../infra/metrics.js';
import type { Pool } from '../../infra/postgres/pool.js';
import { agentsProjector } from '../../projections/agents/projector.js';
import { findAgent, findAgentIdOfDevice } from '../../projections/agents/queries.js';
import { waitUntilProjectedThrough } from '../../projections/catch-up.js';
import type { AgentRecord } from '../broker/agent-directory.js';
import type { RunningBroker } from '../broker/broker.js';
import { RejectedMessage } from '../rejected-message.js';
import type { AgentQuota } from '../readings/reading-quota.js';

type Broker = Pick<RunningBroker, 'publishDown' | 'holdsAgent'>;

export interface CommandDeliveryOptions {
  readonly store: EventStore;
  readonly pool: Pool;
  readonly logger: Logger;
  /** The server's clock: it alone decides whether a command's TTL has ended. */
  readonly now: () => Date;
  /** Device streams read at once when an agent comes back. */
  readonly redeliveryConcurrency?: number;
  readonly metrics?: CommandMetrics;
  /** Per-agent quota on acks (COMMAND_ACKS_QUOTA_*); none when absent. */
  readonly ackQuota?: AgentQuota;
  /** Counts each ack dropped without recording anything. */
  readonly onAckDropped?: (reason: AckDropReason | 'foreign_device') => void;
}

const METADATA = { source: 'ingress' };

/**
 * The read model that says which agent speaks for a device, and how long a lookup waits for it to catch up.
 * It routes only (where to publish, whose ack to take); every decision is made on the device's stream.
 */
const AGENTS_PROJECTION = agentsProjector();
const AGENTS_WAIT_MS = 10_000;

/**
 * Commands on the ingress side (docs/commands.md, "Delivery and outcome"). Only the broker node that holds an
 * agent's connection sends it commands, and only once the agent has reported `online` there (it has
 * subscribed by then). Each step is decided over the device's control state and recorded on the device
 * stream BEFORE anything is published, so an imperative command recorded as sent is never sent again, even
 * if this process dies between the two. Decisions on one device take turns (decideOnStream).
 */
export class CommandDelivery {
  readonly #options: CommandDeliveryOptions;
  readonly #logger: Logger;
  readonly #ready = new Set<string>();
  #broker: Broker | undefined;

  constructor(options: CommandDeliveryOptions) {
    this.#options = options;
    this.#logger = options.logger.child({ component: 'command-delivery' });
  }

  /** The broker is started after the uplink handlers that call into this object. */
  attach(broker: Broker): void {
    this.#broker = broker;
  }

  /**
   * A command was accepted (at `position`): send it if its agent is here and ready, else it waits for the
   * agent. A device is registered before any command to it, but the agents read model may not show it yet:
   * then it is looked up again once that read model has applied everything up to the command, waiting at
   * most AGENTS_WAIT_MS, as acting on the lag would leave the command unsent until its agent reconnects.
   */
  async accepted(deviceId: string, commandId: string, position: string): Promise<void> {
    const { pool, store } = this.#options;
    let agent = await findAgentIdOfDevice(pool, deviceId);
    if (!agent) {
      if (!(await waitUntilProjectedThrough(pool, store, AGENTS_PROJECTION, position, AGENTS_WAIT_MS))) {
        this.#logger.warn(
          { deviceId, commandId },
          'agents read model behind: the command waits for its agent to come online again',
        );
      }
      agent = await findAgentIdOfDevice(pool, deviceId);
    }
    const agentId = this.#readyHere(agent);
    if (agentId === undefined) return;
    await this.#decideAndSend(deviceId, agentId, (state) =>
      decideSend(state, commandId, 'accepted', { agentId, now: this.#options.now() }),
    );
  }

  /**
   * The agent reported `online` on this node: send every pending command of its devices. Its devices as the
   * read model holds them now, not as when it connected: a command accepted meanwhile (while the agent's
   * resend still ran, so it was not ready) for a device adopted since is sent only from here. Whatever
   * `accepted` finds after the agent is marked ready, it sends itself.
   */
  async agentOnline(agent: AgentRecord): Promise<void> {
    this.#ready.add(agent.agentId);
    const current = await findAgent(this.#options.pool, agent.agentId).catch((error: unknown) => {
      this.#logger.error(
        { err: error, agentId: agent.agentId },
        'reading the agent failed: pending commands go to the devices it had at connect',
      );
      return undefined;
    });
    if (current?.revoked) return;
    const devices = [...new Set([...agent.deviceIds, ...(current?.deviceIds ?? [])])];
    const concurrency = this.#options.redeliveryConcurrency ?? 8;
    const next = async (): Promise<void> => {
      for (let deviceId = devices.shift(); deviceId !== undefined; deviceId = devices.shift()) {
        if (!this.#ready.has(agent.agentId)) return;
        await this.#decideAndSend(deviceId, agent.agentId, (state) =>
          decideRedelivery(state, { agentId: agent.agentId, now: this.#options.now() }),
        );
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, devices.length) }, next));
  }

  agentOffline(agentId: string): void {
    this.#ready.delete(agentId);
  }

  /**
   * A command ended without the agent (cancelled, superseded, expired): tell the agent, if it is here, so
   * it does not apply a command it has not applied yet.
   */
  async ended(
    deviceId: string,
    commandId: string,
    outcome: 'cancelled' | 'superseded' | 'expired',
  ): Promise<void> {
    // No wait for a lagging read model here: telling is only useful for a command that was sent, and
    // sending it needed the device in the read model already.
    const agentId = this.#readyHere(await findAgentIdOfDevice(this.#options.pool, deviceId));
    if (agentId === undefined) return;
    await this.#broker!.publishDown(agentId, 'commands', { action: 'cancel', commandId, deviceId, outcome });
  }

  /**
   * The agent's ack, before its PUBACK: the command's outcome, or an ignored late ack. Held back first while
   * the agent is over its ack quota. An ack that records nothing (a device that is not the agent's, a
   * command its device does not have, one never sent to this agent, a late ack after one was recorded) is
   * counted and dropped (RejectedMessage), so no agent can grow a stream with acks it was never asked for.
   */
  async ack(
    agent: AgentRecord,
    commandId: string,
    ack: Pick<AgentAck, 'status' | 'detail'> & { readonly deviceId: string },
    connection?: AbortSignal,
  ): Promise<void> {
    await this.#options.ackQuota?.admit(agent.agentId, 1, connection);
    const { deviceId } = ack;
    // The connection's record may be older than the device (adopted since, and told before it was re-read).
    if (!agent.deviceIds.has(deviceId) && !(await this.#speaksFor(agent.agentId, deviceId))) {
      throw this.#dropped('foreign_device', `ack for ${deviceId}, not a device of this agent`);
    }
    const { result: decision, state: after } = await decideOnStream(
      this.#options.store,
      deviceStreamName(deviceId),
      controlFolding,
      (state: DeviceControlState) => {
        const decided = decideAck(state, {
          agentId: agent.agentId,
          commandId,
          status: ack.status,
          detail: ack.detail,
          now: this.#options.now(),
        });
        return { events: decided.accepted ? decided.events : [], result: decided };
      },
      { metadata: METADATA },
    );
    if (!decision.accepted) {
      throw this.#dropped(
        decision.dropped,
        `ack for ${commandId} on device ${deviceId}: ${decision.dropped}`,
      );
    }
    this.#options.metrics?.acknowledged(after, decision.events);
  }

  #dropped(reason: AckDropReason | 'foreign_device', message: string): RejectedMessage {
    this.#options.onAckDropped?.(reason);
    return new RejectedMessage(reason, message);
  }

  /** The agent, if it may be sent commands through this node now. */
  #readyHere(agent: { agentId: string; revoked: boolean } | undefined): string | undefined {
    if (!agent || agent.revoked || !this.#ready.has(agent.agentId)) return undefined;
    return this.#broker?.holdsAgent(agent.agentId) ? agent.agentId : undefined;
  }

  async #speaksFor(agentId: string, deviceId: string): Promise<boolean> {
    return (await findAgentIdOfDevice(this.#options.pool, deviceId))?.agentId === agentId;
  }

  async #decideAndSend(
    deviceId: string,
    agentId: string,
    decide: (state: DeviceControlState) => SendDecision,
  ): Promise<void> {
    const { result: toApply, state: after } = await decideOnStream(
      this.#options.store,
      deviceStreamName(deviceId),
      controlFolding,
      (state: DeviceControlState) => {
        const decision = decide(state);
        return { events: decision.events as ControlEvent[], result: decision.toApply };
      },
      { metadata: METADATA },
    );
    this.#options.metrics?.sent(after, toApply);
    for (const command of toApply) await this.#publish(agentId, command);
  }

  async #publish(agentId: string, command: CommandToApply): Promise<void> {
    try {
      await this.#broker!.publishDown(agentId, 'commands', { action: 'apply', ...command });
    } catch (error) {
      // Recorded as sent already: a desired command goes again on the next reconnect, an imperative one
      // ends by its TTL. Never publish twice from here.
      this.#logger.error(
        { err: error, agentId, commandId: command.commandId },
        'publishing a command failed',
      );
    }
  }
}
