import { readControlState } from '../../src/control/device-stream.js';
import type { CommandStatus } from '../../src/domain/control/command-events.js';
import { deviceStreamName } from '../../src/domain/devices/index.js';
import type { EventStore } from '../../src/eventstore/port.js';
import type { CommandLedger } from './command-driver.js';

/** A command as the device's stream records it. */
export interface RecordedCommand {
  readonly commandId: string;
  readonly idempotencyKey: string | undefined;
  /** CommandAccepted and CommandSent events for it (a fold would hide a second one). */
  readonly accepted: number;
  readonly sends: number;
  readonly status: CommandStatus;
}

export interface CommandsReport {
  /** Idempotency keys used, keys answered 201 and otherwise, keys never answered (the soak ended first). */
  readonly keys: number;
  readonly accepted: number;
  readonly refused: number;
  readonly unanswered: number;
  /** Keys that took more than one request, and all requests together. */
  readonly retriedKeys: number;
  readonly requests: number;
  /** Commands on the device's stream, by status at the end. */
  readonly recorded: number;
  readonly byStatus: Readonly<Record<string, number>>;
  /** Command ids the agent received an `apply` for, and the ones its device acted on. */
  readonly delivered: number;
  readonly applied: number;
  /** Keys answered 201 that recorded no command, or one other than the answer named. */
  readonly keysWithoutCommand: number;
  /** Keys that recorded more than one command; a refused key that recorded any. */
  readonly keysWithSeveralCommands: number;
  /** Commands whose key the soak never sent. */
  readonly strayCommands: number;
  /** Command ids accepted or sent more than once on the stream. */
  readonly recordedTwice: number;
  /** Command ids the agent received more than once, or acted on more than once. */
  readonly deliveredTwice: number;
  readonly appliedTwice: number;
  /** Command ids the agent acted on that the stream does not hold. */
  readonly appliedUnknown: number;
  /** Succeeded on the stream, but the agent never acted on it. */
  readonly succeededUnapplied: number;
  readonly examples: Readonly<Record<string, readonly string[]>>;
}

/** The commands of `deviceId` as its stream records them (never a read model). */
export async function recordedCommands(store: EventStore, deviceId: string): Promise<RecordedCommand[]> {
  const counts = new Map<string, { key: string | undefined; accepted: number; sends: number }>();
  for (const event of await store.readStream(deviceStreamName(deviceId))) {
    const data = event.data as { commandId?: string; idempotencyKey?: string };
    if (data.commandId === undefined) continue;
    const entry = counts.get(data.commandId) ?? { key: undefined, accepted: 0, sends: 0 };
    if (event.type === 'CommandAccepted') {
      entry.accepted += 1;
      entry.key = data.idempotencyKey;
    }
    if (event.type === 'CommandSent') entry.sends += 1;
    counts.set(data.commandId, entry);
  }
  const { commands } = await readControlState(store, deviceId);
  return [...counts].map(([commandId, c]) => ({
    commandId,
    idempotencyKey: c.key,
    accepted: c.accepted,
    sends: c.sends,
    status: commands.get(commandId)?.status ?? 'queued',
  }));
}

/**
 * Each idempotency key the soak used recorded exactly one command (the one its answer named; none for a
 * refused key), and every command acted at most once: accepted and sent once on the stream, received and
 * applied once by the agent (imperative commands), and never reported succeeded without the agent acting.
 */
export function judgeCommands(ledger: CommandLedger, recorded: readonly RecordedCommand[]): CommandsReport {
  const examples: Record<string, string[]> = {};
  const note = (kind: string, what: string) => {
    const list = (examples[kind] ??= []);
    if (list.length < 5) list.push(what);
  };
  const byKey = new Map<string, RecordedCommand[]>();
  const byId = new Map(recorded.map((c) => [c.commandId, c]));
  const sentKeys = new Set(ledger.sent.map((c) => c.key));
  let strayCommands = 0;
  let recordedTwice = 0;
  let succeededUnapplied = 0;
  const byStatus: Record<string, number> = {};
  for (const command of recorded) {
    byStatus[command.status] = (byStatus[command.status] ?? 0) + 1;
    if (command.idempotencyKey === undefined || !sentKeys.has(command.idempotencyKey)) {
      strayCommands += 1;
      note('strayCommands', command.commandId);
    } else byKey.set(command.idempotencyKey, [...(byKey.get(command.idempotencyKey) ?? []), command]);
    if (command.accepted > 1 || command.sends > 1) {
      recordedTwice += 1;
      note('recordedTwice', command.commandId);
    }
    if (command.status === 'succeeded' && !ledger.applications.has(command.commandId)) {
      succeededUnapplied += 1;
      note('succeededUnapplied', command.commandId);
    }
  }

  let keysWithoutCommand = 0;
  let keysWithSeveralCommands = 0;
  for (const sent of ledger.sent) {
    const commands = byKey.get(sent.key) ?? [];
    const allowed = sent.status === undefined || sent.status === 201 ? 1 : 0;
    if (commands.length > allowed) {
      keysWithSeveralCommands += 1;
      note('keysWithSeveralCommands', sent.key);
    }
    if (sent.status === 201 && (commands.length === 0 || commands[0]!.commandId !== sent.commandId)) {
      keysWithoutCommand += 1;
      note('keysWithoutCommand', sent.key);
    }
  }

  const twice = (counts: ReadonlyMap<string, number>, kind: string) => {
    let n = 0;
    for (const [commandId, times] of counts) {
      if (times <= 1) continue;
      n += 1;
      note(kind, `${commandId} x${times}`);
    }
    return n;
  };
  let appliedUnknown = 0;
  for (const commandId of ledger.applications.keys()) {
    if (byId.has(commandId)) continue;
    appliedUnknown += 1;
    note('appliedUnknown', commandId);
  }

  return {
    keys: ledger.sent.length,
    accepted: ledger.sent.filter((c) => c.status === 201).length,
    refused: ledger.sent.filter((c) => c.status !== undefined && c.status !== 201).length,
    unanswered: ledger.sent.filter((c) => c.status === undefined).length,
    retriedKeys: ledger.sent.filter((c) => c.attempts > 1).length,
    requests: ledger.sent.reduce((n, c) => n + c.attempts, 0),
    recorded: recorded.length,
    byStatus,
    delivered: ledger.deliveries.size,
    applied: ledger.applications.size,
    keysWithoutCommand,
    keysWithSeveralCommands,
    strayCommands,
    recordedTwice,
    deliveredTwice: twice(ledger.deliveries, 'deliveredTwice'),
    appliedTwice: twice(ledger.applications, 'appliedTwice'),
    appliedUnknown,
    succeededUnapplied,
    examples,
  };
}

/** True when every key recorded one command and none acted more than once. */
export const actedAtMostOnce = (r: Omit<CommandsReport, 'examples'>): boolean =>
  r.keysWithoutCommand === 0 &&
  r.keysWithSeveralCommands === 0 &&
  r.strayCommands === 0 &&
  r.recordedTwice === 0 &&
  r.deliveredTwice === 0 &&
  r.appliedTwice === 0 &&
  r.appliedUnknown === 0 &&
  r.succeededUnapplied === 0;

/** Until no command waits to be sent and every command the agent acted on has its outcome recorded. */
export async function commandsAtRest(store: EventStore, ledger: CommandLedger): Promise<boolean> {
  const recorded = await recordedCommands(store, ledger.deviceId);
  return recorded.every(
    (c) => c.status !== 'queued' && (c.status !== 'sent' || !ledger.applications.has(c.commandId)),
  );
}
