import type { Readable } from 'node:stream';

/**
 * aedes 1.x has no maximum packet size: its parser buffers whatever length a fixed header announces, up
 * to MQTT's 256 MiB. This follows the framing of the inbound byte stream (fixed header byte, variable
 * length remaining length, then skip the body) and reports the first packet whose announced size is
 * over the limit, as soon as its header arrives and before its body is buffered.
 */
export class PacketSizeScanner {
  readonly #maxBytes: number;
  #state: 'header' | 'length' | 'body' | 'stopped' = 'header';
  #lengthBytes = 0;
  #multiplier = 1;
  #remaining = 0;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /** Returns the announced size of an oversized packet starting in this chunk, once; otherwise undefined. */
  scan(chunk: Uint8Array): number | undefined {
    let i = 0;
    while (i < chunk.length) {
      switch (this.#state) {
        case 'stopped':
          return undefined;
        case 'header':
          i += 1;
          this.#state = 'length';
          this.#lengthBytes = 0;
          this.#multiplier = 1;
          this.#remaining = 0;
          break;
        case 'length': {
          const byte = chunk[i++]!;
          this.#remaining += (byte & 0x7f) * this.#multiplier;
          this.#multiplier *= 128;
          this.#lengthBytes += 1;
          if (byte & 0x80) {
            // A fifth length byte is malformed; aedes' own parser rejects it, nothing left to guard.
            if (this.#lengthBytes === 4) this.#state = 'stopped';
            break;
          }
          const size = 1 + this.#lengthBytes + this.#remaining;
          if (size > this.#maxBytes) {
            this.#state = 'stopped';
            return size;
          }
          this.#state = this.#remaining === 0 ? 'header' : 'body';
          break;
        }
        case 'body': {
          const take = Math.min(this.#remaining, chunk.length - i);
          i += take;
          this.#remaining -= take;
          if (this.#remaining === 0) this.#state = 'header';
          break;
        }
      }
    }
    return undefined;
  }
}

/**
 * Watches a connection aedes already reads. aedes reads in paused mode ('readable' + read()); a 'data'
 * listener added after that does not switch the stream to flowing mode, it is called synchronously
 * from each read() with the chunk just before aedes parses it, so the connection can be destroyed
 * before an oversized body accumulates.
 */
export function guardPacketSize(connection: Readable, maxBytes: number, onOversized: (size: number) => void) {
  const scanner = new PacketSizeScanner(maxBytes);
  connection.on('data', (chunk: Buffer) => {
    const size = scanner.scan(chunk);
    if (size !== undefined) onOversized(size);
  });
}
