import { randomUUID } from 'node:crypto';
import type { ApplyCommand } from '../../src/edge-sim/commands.js';
import type { EdgeSim } from '../../src/edge-sim/index.js';
import type { SoakApi } from './soak-api.js';

/** What became of one POST, by its idempotency key. */
export interface SentCommand {
  readonly key: string;
  /** Requests it took until the API answered (the same key each time). */
  attempts: number;
  /** The answer's status (201 accepted, 403 refused by the gate, ...); undefined while unanswered. */
  status: number | undefined;
  /** The command the 201 named. */
  commandId: string | undefined;
}

/** The client's and the agent's side of the commands, for checking the cloud's. */
export interface CommandLedger {
  readonly deviceId: string;
  readonly sent: readonly SentCommand[];
  /** Per command id: `apply` messages the agent received, and applications (its device acted). */
  readonly deliveries: ReadonlyMap<string, number>;
  readonly applications: ReadonlyMap<string, number>;
}

/** Long enough that a command outlives any outage of its agent's ingress in a soak. */
export const SOAK_COMMAND_TTL_SECONDS = 600;

/**
 * Switches the simulated smart plug (binary.switch, S1) every `intervalMs` with an imperative command under
 * a fresh Idempotency-Key, as a careful client would: when the API does not answer (the api role killed or
 * restarting, 503), it sends the same request with the same key again until it does, then moves on. It
 * listens to the agent for every `apply` it receives and every command its device acts on.
 */
export class CommandDriver {
  readonly #api: SoakApi;
  readonly #deviceId: string;
  readonly #intervalMs: number;
  readonly #sent: SentCommand[] = [];
  readonly #deliveries = new Map<string, number>();
  readonly #applications = new Map<string, number>();
  readonly #stop = new AbortController();
  /** Aborts the request being retried: the soak is ending and the API did not answer in time. */
  readonly #giveUp = new AbortController();
  /** Aborts the request being retried: the soak is ending, the API did not answer in time. */ #running:
    Promise<void> | undefined;

  constructor(api: SoakApi, sim: EdgeSim, deviceId: string, options: { intervalMs?: number } = {}) {
    this.#api = api;
    this.#deviceId = deviceId;
    this.#intervalMs = options.intervalMs ?? 2000;
    const count = (map: Map<string, number>) => (m: ApplyCommand) => {
      if (m.deviceId === deviceId) map.set(m.commandId, (map.get(m.commandId) ?? 0) + 1);
    };
    sim.on('command', count(this.#deliveries));
    sim.on('applied', count(this.#applications));
  }

  get ledger(): CommandLedger {
    return {
      deviceId: this.#deviceId,
      sent: this.#sent,
      deliveries: this.#deliveries,
      applications: this.#applications,
    };
  }

  start(): void {
    this.#running = this.#run();
  }

  /**
   * Sends nothing new; resolves once the command being sent has its answer (true), or after `timeoutMs`
   * without one (false: the soak's end, not the API, cut it short).
   */
  async finish(timeoutMs: number): Promise<boolean> {
    this.#stop.abort();
    const timer = setTimeout(() => this.#giveUp.abort(), timeoutMs);
    await this.#running;
    clearTimeout(timer);
    return this.#sent.every((c) => c.status !== undefined);
  }

  async #run(): Promise<void> {
    let value = true;
    while (!this.#stop.signal.aborted) {
      const startedAt = Date.now();
      const command: SentCommand = {
        key: randomUUID(),
        attempts: 0,
        status: undefined,
        commandId: undefined,
      };
      this.#sent.push(command);
      try {
        const answer = await this.#api.untilAnswered(
          'POST',
          `/v1/devices/${encodeURIComponent(this.#deviceId)}/commands`,
          {
            capabilityKey: 'binary.switch',
            value,
            mode: 'imperative',
            ttlSeconds: SOAK_COMMAND_TTL_SECONDS,
          },
          {
            headers: { 'Idempotency-Key': command.key },
            signal: this.#giveUp.signal,
            onAttempt: () => (command.attempts += 1),
          },
        );
        command.status = answer.status;
        command.commandId = (answer.body as { command?: { commandId?: string } }).command?.commandId;
      } catch {
        return;
      }
      value = !value;
      await this.#api.pause(Math.max(0, startedAt + this.#intervalMs - Date.now()), this.#stop.signal);
    }
  }
}
