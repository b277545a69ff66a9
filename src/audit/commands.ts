import {
  FINAL_STATUS_AFTER,
  commandEvents,
  type CommandEvent,
  type CommandStatus,
} from '../domain/control/command-events.js';
import { evolveControl, initialControlState, type DeviceControlState } from '../domain/control/index.js';
import type { EventStore } from '../eventstore/port.js';
import { describeActor, occurredAt, readHistory, withinFilter, type AuditFilter } from './history.js';

/** One step of one command (or an S3 challenge issued for one), as the auditor reads it. */
export interface CommandStepRow {
  readonly position: string;
  readonly at: string;
  readonly projectId: string;
  readonly deviceId: string;
  /** The challenge id for `challenge_issued`. */
  readonly commandId: string;
  readonly step: CommandStep;
  /** The command's status after this step; for `ack_ignored` and a second outcome, the outcome that stood. */
  readonly status: CommandStatus | 'challenge';
  readonly capability: string;
  readonly value: boolean | number | string;
  readonly mode: string;
  /** Who caused the step: the client or operator, the agent that acknowledged, or the system. */
  readonly by: string;
  /** attempt (sent), reason (failed, cancelled, superseded by), detail (acks). */
  readonly detail: string;
}

type CommandStep =
  | 'challenge_issued'
  | 'accepted'
  | 'sent'
  | 'succeeded'
  | 'failed'
  | 'expired'
  | 'superseded'
  | 'cancelled'
  | 'ack_ignored';

/**
 * Every step of every command, oldest first, replayed from the event store. Steps outside the window are
 * left out, but the whole history is read so a late step still names its command's capability and value.
 */
export async function commandHistory(store: EventStore, filter: AuditFilter): Promise<CommandStepRow[]> {
  // Each device's commands folded as the control state folds them, so status here is the gate's status.
  const devices = new Map<string, DeviceControlState>();
  const rows: CommandStepRow[] = [];
  for await (const recorded of readHistory(
    store,
    commandEvents.map((d) => d.type),
  )) {
    const event = { type: recorded.type, data: recorded.data } as CommandEvent;
    const { deviceId, projectId } = event.data;
    const before = devices.get(deviceId) ?? initialControlState();
    const after = evolveControl(before, event);
    devices.set(deviceId, after);
    const at = occurredAt(recorded);
    if (!withinFilter(event.data, at, filter)) continue;
    const row = stepOf(event, before, after);
    if (row) rows.push({ position: recorded.position, at, projectId, deviceId, ...row });
  }
  return rows;
}

type Step = Omit<CommandStepRow, 'position' | 'at' | 'projectId' | 'deviceId'>;

function stepOf(
  event: CommandEvent,
  before: DeviceControlState,
  after: DeviceControlState,
): Step | undefined {
  if (event.type === 'CommandChallengeIssued') {
    const { challengeId, capability, value, clientId, expiresAt } = event.data;
    return {
      commandId: challengeId,
      step: 'challenge_issued',
      status: 'challenge',
      capability,
      value,
      mode: '',
      by: `client:${clientId}`,
      detail: `expires ${expiresAt}`,
    };
  }
  const { commandId } = event.data;
  const command = after.commands.get(commandId);
  if (!command) return undefined;
  const base = {
    commandId,
    capability: command.capability,
    value: command.value,
    mode: command.mode,
    status: command.status,
  };
  // The agent that acknowledged, as the ack's event records it; events recorded before it was kept name the
  // agent the command was last sent to.
  const ackedBy = (recorded: { agentId?: string }) => {
    const agentId = recorded.agentId ?? before.commands.get(commandId)?.lastAttempt?.agentId;
    return agentId === undefined ? 'agent' : `agent:${agentId}`;
  };
  switch (event.type) {
    case 'CommandAccepted':
      return {
        ...base,
        step: 'accepted',
        by: describeActor(event.data.by),
        detail: `ttl ${event.data.ttlSeconds}s`,
      };
    case 'CommandSent':
      return {
        ...base,
        step: 'sent',
        by: 'system',
        detail: `attempt ${event.data.attempt} to ${event.data.agentId}`,
      };
    case 'CommandSucceeded':
      return {
        ...base,
        step: FINAL_STATUS_AFTER[event.type],
        by: ackedBy(event.data),
        detail: event.data.detail ?? '',
      };
    case 'CommandFailed':
      return {
        ...base,
        step: FINAL_STATUS_AFTER[event.type],
        by: ackedBy(event.data),
        detail: joined(event.data.reason, event.data.detail),
      };
    case 'CommandExpired':
      return { ...base, step: FINAL_STATUS_AFTER[event.type], by: 'system', detail: 'ttl ended' };
    case 'CommandSuperseded':
      return {
        ...base,
        step: FINAL_STATUS_AFTER[event.type],
        by: 'system',
        detail: `by ${event.data.supersededBy}`,
      };
    case 'CommandCancelled':
      return {
        ...base,
        step: FINAL_STATUS_AFTER[event.type],
        by: describeActor(event.data.by),
        detail: event.data.reason,
      };
    case 'CommandAckIgnored':
      return {
        ...base,
        step: 'ack_ignored',
        by: ackedBy(event.data),
        detail: joined(`late ${event.data.ackStatus}`, event.data.detail),
      };
  }
}

function joined(...parts: (string | undefined)[]): string {
  return parts.filter((p) => p !== undefined && p !== '').join(': ');
}
