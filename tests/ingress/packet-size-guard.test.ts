import { expect } from 'chai';
import { PacketSizeScanner } from '../../src/ingress/broker/packet-size-guard.js';

/** An MQTT packet with the given remaining length: fixed header byte, varint length, body. */
function packet(remainingLength: number, body = true): Buffer {
  const length: number[] = [];
  let n = remainingLength;
  do {
    let byte = n % 128;
    n = Math.floor(n / 128);
    if (n > 0) byte |= 0x80;
    length.push(byte);
  } while (n > 0);
  return Buffer.concat([Buffer.from([0x30, ...length]), Buffer.alloc(body ? remainingLength : 0, 0x61)]);
}

function scanInPieces(scanner: PacketSizeScanner, data: Buffer, pieceSize: number): number | undefined {
  for (let i = 0; i < data.length; i += pieceSize) {
    const found = scanner.scan(data.subarray(i, i + pieceSize));
    if (found !== undefined) return found;
  }
  return undefined;
}

describe('packet size guard', function () {
  it('lets packets up to the limit through, fixed header included', function () {
    const scanner = new PacketSizeScanner(1000);
    // 1 header byte + 2 length bytes + 997 = 1000
    expect(scanner.scan(packet(997))).to.equal(undefined);
    expect(scanner.scan(packet(0))).to.equal(undefined);
  });

  it('reports an oversized packet from its header alone, before the body arrives', function () {
    const scanner = new PacketSizeScanner(1000);
    expect(scanner.scan(packet(998, false))).to.equal(1001);
  });

  it('reports a 256 MiB announcement without needing any of it', function () {
    const scanner = new PacketSizeScanner(65536);
    expect(scanner.scan(packet(268_435_455, false))).to.equal(268_435_460);
  });

  it('follows the framing across many packets and arbitrary chunk boundaries', function () {
    const stream = Buffer.concat([
      packet(10),
      packet(300),
      packet(0),
      packet(127),
      packet(128),
      packet(5000),
    ]);
    for (const pieceSize of [1, 2, 3, 7, 64, 1000, stream.length]) {
      expect(scanInPieces(new PacketSizeScanner(5000), stream, pieceSize), `pieces of ${pieceSize}`).to.equal(
        5003,
      );
      expect(scanInPieces(new PacketSizeScanner(5003), stream, pieceSize), `pieces of ${pieceSize}`).to.equal(
        undefined,
      );
    }
  });

  it('reports only once, then stops scanning', function () {
    const scanner = new PacketSizeScanner(10);
    expect(scanner.scan(packet(100))).to.equal(102);
    expect(scanner.scan(packet(100))).to.equal(undefined);
  });

  it('leaves a malformed length to the MQTT parser', function () {
    const scanner = new PacketSizeScanner(10);
    expect(scanner.scan(Buffer.from([0x30, 0xff, 0xff, 0xff, 0xff, 0x01]))).to.equal(undefined);
  });
});
