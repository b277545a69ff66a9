import type { z } from 'zod';
import type { commandsDownPayload } from '../ingress/broker/topics.js';
import type { Random } from './random.js';
import type { SimValue } from './signals.js';

export type CommandDown = z.infer<typeof commandsDownPayload>;
export type ApplyCommand = Extract<CommandDown, { action: 'apply' }>;
type CommandAck = { status: 'applied' | 'failed'; detail?: string };

/**
 * How the simulated devices treat commands, so tests and demos can walk the failure paths
 * (docs/edge-agent.md). Change it at any time with `EdgeSim.commandBehaviour`.
 */
export interface CommandBehaviour {
  /** Commands for these capabilities are not applied and are acknowledged `failed`. */
  readonly failCapabilities?: readonly string[];
  /** Chance, from 0 to 1, that a command is not applied and acknowledged `failed` (seeded). */
  readonly failRate?: number;
  /** Wait before applying. A `cancel` that arrives meanwhile drops the command: it is never applied. */
  readonly applyDelayMs?: number;
  /** Wait between applying (the new state is reported at once) and acknowledging: a slow or late ack. */
  readonly ackDelayMs?: number;
}

type Phase = 'waiting' | 'applied' | 'failed' | 'dropped';

interface Known {
  phase: Phase;
  ack?: CommandAck;
  timer?: NodeJS.Timeout;
}

export interface CommandHandlers {
  /** Sets the simulated value; false when the device or capability is not there. */
  apply(deviceId: string, capability: string, value: SimValue): boolean;
  /** Reports the value now held, as a reading, so the cloud's state shows it. */
  report(deviceId: string, capability: string, value: SimValue): void;
  ack(commandId: string, deviceId: string, ack: CommandAck): void;
  /** What happened, for listeners: applied, failed, dropped (cancelled while waiting), repeated, cancel. */
  emit(event: string, detail: unknown): void;
}

/**
 * The agent's side of `down/commands`. An `apply` is handled once per command id: an imperative one that
 * comes again (a QoS 1 redelivery) is only acknowledged again; a desired one (a setpoint re-sent after a
 * reconnect) is applied again, which is harmless for a setpoint. A `cancel` drops a command that is still
 * waiting and makes a later `apply` of it do nothing.
 */
export class SimCommands {
  readonly #known = new Map<string, Known>();
  readonly #handlers: CommandHandlers;
  readonly #random: Random;
  behaviour: CommandBehaviour;
  applied = 0;
  failed = 0;

  constructor(handlers: CommandHandlers, random: Random, behaviour: CommandBehaviour = {}) {
    this.#handlers = handlers;
    this.#random = random;
    this.behaviour = behaviour;
  }

  receive(message: CommandDown): void {
    if (message.action === 'cancel') return this.#cancel(message.commandId, message);
    const known = this.#known.get(message.commandId);
    if (known && (known.phase === 'dropped' || known.phase === 'waiting')) return;
    if (known?.ack && message.mode === 'imperative') {
      this.#handlers.emit('repeated', message);
      this.#handlers.ack(message.commandId, message.deviceId, known.ack);
      return;
    }
    const entry: Known = known ?? { phase: 'waiting' };
    entry.phase = 'waiting';
    this.#known.set(message.commandId, entry);
    const delay = this.behaviour.applyDelayMs ?? 0;
    if (delay > 0) entry.timer = setTimeout(() => this.#apply(message, entry), delay);
    else this.#apply(message, entry);
  }

  /** Stops every pending timer (the agent is stopping). */
  close(): void {
    for (const known of this.#known.values()) clearTimeout(known.timer);
  }

  #apply(message: ApplyCommand, entry: Known): void {
    entry.timer = undefined;
    if (entry.phase !== 'waiting') return;
    const { commandId, deviceId, capability, value } = message;
    const refused = this.#refusal(capability);
    const applied = refused === undefined && this.#handlers.apply(deviceId, capability, value);
    if (applied) {
      entry.phase = 'applied';
      entry.ack = { status: 'applied' };
      this.applied += 1;
      this.#handlers.report(deviceId, capability, value);
    } else {
      entry.phase = 'failed';
      entry.ack = { status: 'failed', detail: refused ?? 'unknown device or capability' };
      this.failed += 1;
    }
    this.#handlers.emit(entry.phase, message);
    const ack = entry.ack;
    const delay = this.behaviour.ackDelayMs ?? 0;
    if (delay > 0) entry.timer = setTimeout(() => this.#handlers.ack(commandId, deviceId, ack), delay);
    else this.#handlers.ack(commandId, deviceId, ack);
  }

  #refusal(capability: string): string | undefined {
    const { failCapabilities = [], failRate = 0 } = this.behaviour;
    if (failCapabilities.includes(capability)) return 'simulated failure';
    if (failRate > 0 && this.#random() < failRate) return 'simulated random failure';
    return undefined;
  }

  #cancel(commandId: string, message: CommandDown): void {
    this.#handlers.emit('cancel', message);
    const known = this.#known.get(commandId);
    if (!known) {
      this.#known.set(commandId, { phase: 'dropped' });
      return;
    }
    if (known.phase !== 'waiting') return;
    clearTimeout(known.timer);
    known.phase = 'dropped';
    this.#handlers.emit('dropped', message);
  }
}
