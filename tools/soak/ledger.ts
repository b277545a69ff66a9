import type { AckedMessage, EdgeSim, SentMessage } from '../../src/edge-sim/index.js';

/** What the simulated agent did with one readings message, keyed by the agent's own id: (device, seq). */
export interface LedgerEntry {
  readonly deviceId: string;
  readonly seq: number;
  readonly readings: SentMessage['readings'];
  /** Transmissions on the wire: more than one means the MQTT client sent it again after a reconnect. */
  sends: number;
  lastSentMs: number;
  acked: boolean;
}

export function messageKey(deviceId: string, seq: number): string {
  return `${deviceId}#${seq}`;
}

/**
 * The agent's side of the story, for checking the cloud's: every readings message it put on the wire, how
 * often, and whether the broker acknowledged it (PUBACK: "durably stored").
 */
export class MessageLedger {
  readonly #entries = new Map<string, LedgerEntry>();

  attach(sim: EdgeSim): this {
    sim.on('sent', (m: SentMessage) => {
      const key = messageKey(m.deviceId, m.seq);
      const entry = this.#entries.get(key);
      if (entry) {
        entry.sends += 1;
        entry.lastSentMs = m.atMs;
      } else {
        this.#entries.set(key, { ...m, sends: 1, lastSentMs: m.atMs, acked: false });
      }
    });
    sim.on('acked', (m: AckedMessage) => {
      const entry = this.#entries.get(messageKey(m.deviceId, m.seq));
      if (entry) entry.acked = true;
    });
    return this;
  }

  entries(): IterableIterator<LedgerEntry> {
    return this.#entries.values();
  }

  get(deviceId: string, seq: number): LedgerEntry | undefined {
    return this.#entries.get(messageKey(deviceId, seq));
  }

  /** Messages on the wire without a PUBACK yet. */
  unacknowledged(): number {
    let n = 0;
    for (const e of this.#entries.values()) if (!e.acked) n++;
    return n;
  }

  acknowledged(): number {
    return this.#entries.size - this.unacknowledged();
  }
}
