import { isPending, type CommandRecord, type DeviceControlState } from './state.js';
import { isBefore } from './instants.js';
import type { CommandEvent, CommandStatus } from './command-events.js';

/**
 * Delivery and outcome of commands (docs/commands.md, "Delivery and outcome"): pure decisions over the
 * device's control state. The ingress records what they decide on the device stream, then publishes.
 *
 * - A command is sent only while it is pending and its TTL, by the server's clock, has not ended; one whose
 *   TTL has ended is expired instead, so an expired command is never sent.
 * - `imperative`: sent at most once. Once CommandSent is recorded it is never sent again, whatever happens
 *   to the connection. One accepted while its agent was away stays queued and is sent once when the agent
 *   comes back within the TTL (it was never delivered, so that is its first and only delivery).
 * - `desired`: a setpoint, sent again (attempt + 1) each time its agent comes back, until an outcome or the
 *   end of its TTL.
 */

export interface Delivery {
  /** The agent the command goes to. */
  readonly agentId: string;
  readonly now: Date;
}

/** Why a send is considered: the command was just accepted, or the device's agent (re)connected. */
export type SendTrigger = 'accepted' | 'reconnected';

/** The command as the agent gets it (the `apply` message, docs/mqtt.md). */
export interface CommandToApply {
  readonly commandId: string;
  readonly deviceId: string;
  readonly capability: string;
  readonly value: CommandRecord['value'];
  readonly mode: CommandRecord['mode'];
  readonly attempt: number;
  readonly expiresAt: string;
}

export interface SendDecision {
  readonly events: CommandEvent[];
  /** What to publish once the events are recorded. */
  readonly toApply: CommandToApply[];
}

/** Send one command (just accepted, or again after a reconnect), or expire it if its TTL has ended. */
export function decideSend(
  state: DeviceControlState,
  commandId: string,
  trigger: SendTrigger,
  delivery: Delivery,
): SendDecision {
  const command = state.commands.get(commandId);
  const decision: SendDecision = { events: [], toApply: [] };
  if (!command || !state.registration) return decision;
  planSend(state, command, trigger, delivery, decision);
  return decision;
}

/** Everything the device's agent should be sent now that it is back: every pending command, in order. */
export function decideRedelivery(state: DeviceControlState, delivery: Delivery): SendDecision {
  const decision: SendDecision = { events: [], toApply: [] };
  if (!state.registration) return decision;
  for (const command of state.commands.values()) {
    planSend(state, command, 'reconnected', delivery, decision);
  }
  return decision;
}

function planSend(
  state: DeviceControlState,
  command: CommandRecord,
  trigger: SendTrigger,
  { agentId, now }: Delivery,
  decision: SendDecision,
): void {
  if (!isPending(command)) return;
  const ref = refOf(state, command);
  if (isExpired(command, now)) {
    decision.events.push({ type: 'CommandExpired', data: { ...ref, at: now.toISOString() } });
    return;
  }
  const sentBefore = command.lastAttempt?.attempt ?? 0;
  // Imperative: never after a first send. Desired: again only when the agent came back.
  if (sentBefore > 0 && (command.mode === 'imperative' || trigger !== 'reconnected')) return;
  const attempt = sentBefore + 1;
  decision.events.push({
    type: 'CommandSent',
    data: { ...ref, agentId, attempt, sentAt: now.toISOString() },
  });
  decision.toApply.push({
    commandId: command.commandId,
    deviceId: ref.deviceId,
    capability: command.capability,
    value: command.value,
    mode: command.mode,
    attempt,
    expiresAt: command.expiresAt,
  });
}

export interface AgentAck {
  /** The agent whose connection the ack came over. */
  readonly agentId: string;
  readonly commandId: string;
  readonly status: 'applied' | 'failed';
  readonly detail?: string;
  readonly now: Date;
}

/** What CommandFailed records as its reason when the agent reported the failure. */
const AGENT_REPORTED_FAILURE = 'agent_reported';

/**
 * Why an ack records nothing and is dropped:
 * - `unknown_command`: the device has no such command;
 * - `not_sent_to_agent`: the command was never sent, or its latest send went to another agent, so this
 *   agent cannot know its outcome (a forged or misrouted ack);
 * - `ack_ignored_before`: a late ack of this command was recorded already; one is kept for the record,
 *   more would only grow the stream.
 */
export type AckDropReason = 'unknown_command' | 'not_sent_to_agent' | 'ack_ignored_before';

export type AckDecision =
  | { readonly accepted: true; readonly events: CommandEvent[] }
  | { readonly accepted: false; readonly dropped: AckDropReason };

/**
 * The agent's ack: the outcome of a pending command (succeeded or failed). Only the agent the command's
 * latest send went to can answer it. An ack for a command that already has an outcome, or whose TTL has
 * ended by the server's clock, changes nothing and is recorded as ignored once per command; the
 * redelivery of the ack that set the outcome records nothing. Every recorded step names the agent.
 */
export function decideAck(state: DeviceControlState, ack: AgentAck): AckDecision {
  const command = state.commands.get(ack.commandId);
  if (!command || !state.registration) return { accepted: false, dropped: 'unknown_command' };
  if (command.lastAttempt?.agentId !== ack.agentId) return { accepted: false, dropped: 'not_sent_to_agent' };
  const ref = refOf(state, command);
  const at = ack.now.toISOString();
  const by = { agentId: ack.agentId };
  const detail = ack.detail === undefined ? {} : { detail: ack.detail };
  const ignored = (outcome: CommandStatus): CommandEvent => ({
    type: 'CommandAckIgnored',
    data: { ...ref, at, ...by, ackStatus: ack.status, outcome, ...detail },
  });
  if (isPending(command)) {
    if (isExpired(command, ack.now)) {
      return {
        accepted: true,
        events: [{ type: 'CommandExpired', data: { ...ref, at } }, ignored('expired')],
      };
    }
    return {
      accepted: true,
      events: [
        ack.status === 'applied'
          ? { type: 'CommandSucceeded', data: { ...ref, at, ...by, ...detail } }
          : { type: 'CommandFailed', data: { ...ref, at, ...by, reason: AGENT_REPORTED_FAILURE, ...detail } },
      ],
    };
  }
  if (isOutcomeOf(command, ack)) return { accepted: true, events: [] };
  if (command.ignoredAcks > 0) return { accepted: false, dropped: 'ack_ignored_before' };
  return { accepted: true, events: [ignored(command.status)] };
}

/** CommandExpired for every pending command whose TTL has ended by `now`. */
export function decideExpiry(state: DeviceControlState, now: Date): CommandEvent[] {
  if (!state.registration) return [];
  return [...state.commands.values()]
    .filter((c) => isPending(c) && isExpired(c, now))
    .map((c) => ({ type: 'CommandExpired' as const, data: { ...refOf(state, c), at: now.toISOString() } }));
}

/** A command's TTL ends at expiresAt: from that instant on it is expired (times share one ISO shape). */
function isExpired(command: Pick<CommandRecord, 'expiresAt'>, now: Date): boolean {
  return !isBefore(now.toISOString(), command.expiresAt);
}

function isOutcomeOf(command: CommandRecord, ack: AgentAck): boolean {
  const same = command.outcome?.detail === ack.detail;
  if (command.status === 'succeeded') return ack.status === 'applied' && same;
  if (command.status === 'failed')
    return ack.status === 'failed' && command.outcome?.reason === AGENT_REPORTED_FAILURE && same;
  return false;
}

function refOf(state: DeviceControlState, command: CommandRecord) {
  const { deviceId, projectId } = state.registration!;
  return { commandId: command.commandId, deviceId, projectId };
}
