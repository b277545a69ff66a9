import { Lane } from './lane.js';

/**
 * The agent's outbound QoS 1 queue, in memory. Two lanes: control messages (status, candidates, command
 * acknowledgements) always go before readings. Only `maxInflight` messages are handed to the MQTT client at
 * a time; the rest wait here, so a long outage holds at most `readingsLimit` readings messages: when full,
 * the oldest one is dropped (and counted), keeping the freshest data. A message whose publish fails goes back
 * to the front of its lane and is sent again; the cloud stores a redelivered message once.
 */
export interface OutboundMessage {
  readonly topic: string;
  readonly payload: Buffer;
  readonly lane: 'control' | 'readings';
  /** Called once, when the broker acknowledged the message (PUBACK): it is durable at the cloud. */
  readonly onAcked?: () => void;
}

export type Publish = (message: OutboundMessage, done: (error?: Error) => void) => void;

export interface OutboxStats {
  readonly queued: number;
  readonly inflight: number;
  readonly acked: number;
  readonly dropped: number;
  readonly retried: number;
}

export class Outbox {
  readonly #control = new Lane<OutboundMessage>();
  readonly #readings = new Lane<OutboundMessage>();
  readonly #readingsLimit: number;
  readonly #maxInflight: number;
  readonly #publish: Publish;
  #open = false;
  #inflight = 0;
  #acked = 0;
  #dropped = 0;
  #retried = 0;
  #idle: (() => void)[] = [];

  constructor(options: { readingsLimit: number; maxInflight: number; publish: Publish }) {
    this.#readingsLimit = options.readingsLimit;
    this.#maxInflight = options.maxInflight;
    this.#publish = options.publish;
  }

  enqueue(message: OutboundMessage): void {
    if (message.lane === 'control') {
      this.#control.push(message);
    } else {
      if (this.#readings.length >= this.#readingsLimit) {
        this.#readings.shift();
        this.#dropped += 1;
      }
      this.#readings.push(message);
    }
    this.pump();
  }

  /** Opens (connected) or holds (disconnected) the queue. */
  setOpen(open: boolean): void {
    this.#open = open;
    if (open) this.pump();
  }

  pump(): void {
    // A client that is disconnecting fails each publish at once, inside the call: one failure ends this
    // pump (looping or pumping again would spin on the same message); the next enqueue or the reconnect
    // pumps again.
    let failed = false;
    while (!failed && this.#open && this.#inflight < this.#maxInflight) {
      const message = this.#control.shift() ?? this.#readings.shift();
      if (!message) break;
      this.#inflight += 1;
      this.#publish(message, (error) => {
        this.#inflight -= 1;
        if (error) {
          failed = true;
          this.#retried += 1;
          (message.lane === 'control' ? this.#control : this.#readings).unshift(message);
        } else {
          this.#acked += 1;
          message.onAcked?.();
          this.pump();
        }
        this.#notifyIdle();
      });
    }
    this.#notifyIdle();
  }

  stats(): OutboxStats {
    return {
      queued: this.#control.length + this.#readings.length,
      inflight: this.#inflight,
      acked: this.#acked,
      dropped: this.#dropped,
      retried: this.#retried,
    };
  }

  /** Resolves once everything queued has been acknowledged, or after `timeoutMs`. */
  drained(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, timeoutMs);
      const check = () => {
        if (this.#inflight === 0 && this.#control.length + this.#readings.length === 0) done();
      };
      this.#idle.push(check);
      check();
      function done() {
        clearTimeout(timer);
        resolve();
      }
    });
  }

  #notifyIdle(): void {
    for (const check of this.#idle) check();
    if (this.#inflight === 0 && this.#control.length + this.#readings.length === 0) this.#idle = [];
  }
}
