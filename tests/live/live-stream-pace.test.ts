import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { expect } from 'chai';
import sinon from 'sinon';
import type { LiveFrame } from '../../src/api/live/frames.js';
import { LiveStream } from '../../src/api/live/stream.js';

const BOUND = 16_384;
const STALL_MS = 1000;
const HIGH_WATER_MARK = 16_384;
const TOO_SLOW = 'event: stream_error\ndata: {"reason":"too_slow"}\n\n';

/**
 * What LiveStream sees of an HTTP response whose client reads at the pace the test sets: bytes written stay
 * unsent until `take` says the client has read them, with 'drain' as Node emits it (once nothing is left).
 * Over a real loopback socket the kernel's buffers and TCP window updates decide when bytes move, which no
 * test could pace. (Node counts bytes as sent by whole write requests, not byte by byte as `take` does; the
 * stream goes by 'drain' alone, so that difference does not reach it.)
 */
class PacedResponse extends EventEmitter {
  written = '';
  writableLength = 0;
  writableNeedDrain = false;
  ended = false;
  readonly socket = undefined;

  writeHead(): this {
    return this;
  }

  write(text: string): boolean {
    this.written += text;
    this.writableLength += Buffer.byteLength(text);
    if (this.writableLength >= HIGH_WATER_MARK) this.writableNeedDrain = true;
    return !this.writableNeedDrain;
  }

  /** The client reads `bytes` of what waits. */
  take(bytes: number): void {
    this.writableLength = Math.max(0, this.writableLength - bytes);
    if (this.writableNeedDrain && this.writableLength === 0) {
      this.writableNeedDrain = false;
      this.emit('drain');
    }
  }

  end(): void {
    this.ended = true;
  }

  destroy(): void {
    this.emit('close');
  }
}

/** Lets real immediates (and what they resolve) run. */
const settle = () => new Promise((resolve) => setImmediate(() => setImmediate(resolve)));

let sequence = 0;
function frame(): LiveFrame {
  sequence += 1;
  const key = String(sequence).padStart(12, '0');
  return {
    key,
    type: 'telemetry',
    projectId: 'prj_pace',
    deviceId: 'dev_pace',
    hubId: null,
    capability: 'environment.temperature',
    text: `id: ${key}\nevent: telemetry\ndata: {"value":"${'x'.repeat(900)}"}\n\n`,
  };
}

/** A stream of one project's telemetry on `res`, opened (following the connection) but not yet answered. */
function openedStream(res: PacedResponse, heartbeatMs: number): LiveStream {
  const stream = new LiveStream(res as unknown as ServerResponse, {
    projectId: 'prj_pace',
    clientId: 'cli_pace',
    keyId: 'kid_pace',
    filter: { types: new Set(['telemetry']), deviceIds: undefined, capabilities: undefined },
    heartbeatMs,
    maxBufferedBytes: BOUND,
    stallMs: STALL_MS,
    expiresAtMs: Date.now() + 3_600_000,
    now: () => Date.now(),
    onClose: () => {},
  });
  stream.open();
  return stream;
}

describe('LiveStream: the answer begins when the hub says where the stream starts', () => {
  it('given an opened stream not yet answered, when its heartbeat falls due, then nothing is written until respond', () => {
    const clock = sinon.useFakeTimers({
      toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'],
    });
    try {
      const res = new PacedResponse();
      const writeHead = sinon.spy(res, 'writeHead');
      const stream = openedStream(res, 15_000);
      clock.tick(45_000);
      expect(writeHead.called, 'no answer before respond, whatever the heartbeat').to.equal(false);
      expect(res.written).to.equal('');
      stream.respond();
      stream.respond();
      expect(writeHead.callCount, 'headers once').to.equal(1);
      clock.tick(15_000);
      expect(res.written).to.equal('retry: 5000\n\n: ping\n\n');
      stream.end('shutdown');
    } finally {
      clock.restore();
    }
  });
});

describe('LiveStream pacing: behind is not cut, stalled is', () => {
  let clock: sinon.SinonFakeTimers;
  let res: PacedResponse;
  let stream: LiveStream;

  beforeEach(() => {
    // setImmediate stays real: the stream looks again after a turn of the event loop before it cuts.
    clock = sinon.useFakeTimers({
      toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'],
    });
    res = new PacedResponse();
    stream = openedStream(res, 60_000);
  });
  afterEach(() => {
    stream.end('shutdown');
    clock.restore();
  });

  /** Offers live frames until one takes the stream past its bound; returns that frame. */
  function offerPastBound(): LiveFrame {
    for (let i = 0; i < 100; i++) {
      const next = frame();
      if (stream.offer(next)) return next;
      expect(res.writableLength, 'below the bound, a frame is taken').to.be.at.most(BOUND);
    }
    throw new Error('never passed the bound');
  }

  /** Takes the stream past its bound and starts waiting for the client; reads how the wait ended, if it has. */
  function fallBehindAndWait(): () => boolean | undefined {
    offerPastBound();
    let settled: boolean | undefined;
    void stream.drained().then((open) => (settled = open));
    return () => settled;
  }

  it('given a live stream, when a frame takes it past its bound, then it takes no live frame until the client has read', async () => {
    const last = offerPastBound();
    expect(res.writableLength).to.be.greaterThan(BOUND);
    expect(stream.cursor).to.equal(last.key);
    const before = res.written;
    expect(stream.offer(frame()), 'already behind: not the moment it fell').to.equal(false);
    expect(res.written, 'nothing written while behind').to.equal(before);
    expect(stream.cursor, 'the cursor stays on the last frame written').to.equal(last.key);

    const open = stream.drained();
    res.take(res.writableLength);
    expect(await open).to.equal(true);
    const next = frame();
    expect(stream.offer(next)).to.equal(false);
    expect(res.written.endsWith(next.text), 'live again once drained').to.equal(true);
  });

  it('given a stream past its bound, when the client takes what waits within the stall time, each time, then it is waited for, never cut', async () => {
    // Three times past the bound, each taken just before the stall time: far longer than one stall in all.
    for (let round = 0; round < 3; round++) {
      const settled = fallBehindAndWait();
      await clock.tickAsync(STALL_MS - 1);
      expect(settled(), 'still waiting just before the stall time').to.equal(undefined);
      res.take(res.writableLength);
      await clock.tickAsync(0);
      expect(settled()).to.equal(true);
    }
    expect(res.written).not.to.include('stream_error');
    expect(stream.closed).to.equal(false);
  });

  it('given a stream past its bound, when the client takes only part of what waits within the stall time, then it is cut with too_slow', async () => {
    const settled = fallBehindAndWait();
    await clock.tickAsync(STALL_MS - 100);
    res.take(1000);
    await clock.tickAsync(100);
    await settle();
    expect(settled()).to.equal(false);
    expect(res.written.endsWith(TOO_SLOW)).to.equal(true);
  });

  it('given a stall timer that fires late, when the socket drains in the same turn of the event loop, then the stream is not cut', async () => {
    const settled = fallBehindAndWait();
    // As after a blocked event loop: the stall timer is due, and the drain comes right behind it, in the same turn.
    setTimeout(() => res.take(res.writableLength), STALL_MS);
    await clock.tickAsync(STALL_MS);
    await settle();
    expect(settled()).to.equal(true);
    expect(stream.closed).to.equal(false);
  });

  it('given a stream past its bound, when the client reads nothing for the stall time, then it is cut with too_slow', async () => {
    const settled = fallBehindAndWait();
    await clock.tickAsync(STALL_MS - 1);
    await settle();
    expect(settled(), 'not before the stall time').to.equal(undefined);
    await clock.tickAsync(1);
    await settle();
    expect(settled()).to.equal(false);
    expect(stream.closed).to.equal(true);
    expect(res.ended).to.equal(true);
    expect(res.written.endsWith(TOO_SLOW)).to.equal(true);
  });

  it('given a catch-up read, when the client stalls on a pushed frame, then it is cut with too_slow too', async () => {
    // A push writes at once and waits only when its frame fills the buffer.
    let pushed: Promise<void>;
    do pushed = stream.push(frame());
    while (!res.writableNeedDrain);
    await clock.tickAsync(STALL_MS - 1);
    expect(stream.closed, 'not before the stall time').to.equal(false);
    await clock.tickAsync(1);
    await settle();
    await pushed;
    expect(stream.closed).to.equal(true);
    expect(res.written.endsWith(TOO_SLOW)).to.equal(true);
  });
});
