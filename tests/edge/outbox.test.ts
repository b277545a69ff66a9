import { expect } from 'chai';
import { Outbox, type OutboundMessage } from '../../src/edge-sim/outbox.js';

const message = (n: number, lane: OutboundMessage['lane'] = 'readings'): OutboundMessage => ({
  topic: `t/${n}`,
  payload: Buffer.from(String(n)),
  lane,
});

describe('edge simulator outbox', () => {
  it('survives a client that fails every publish inside the call, and sends everything once it recovers', () => {
    // mqtt.js does this while disconnecting: the callback runs before publish() returns.
    let failing = true;
    let attempts = 0;
    const sent: string[] = [];
    const outbox = new Outbox({
      readingsLimit: 1000,
      maxInflight: 16,
      publish: (m, done) => {
        attempts += 1;
        if (failing) return done(new Error('client disconnecting'));
        sent.push(m.topic);
        done();
      },
    });
    outbox.setOpen(true);
    for (let n = 0; n < 100; n++) outbox.enqueue(message(n));
    // One attempt per pump (each enqueue pumps once), not a loop on the same message.
    expect(attempts).to.equal(100);
    expect(outbox.stats()).to.include({ queued: 100, inflight: 0, acked: 0, retried: 100 });
    failing = false;
    outbox.setOpen(true);
    expect(sent).to.deep.equal(Array.from({ length: 100 }, (_, n) => `t/${n}`));
    expect(outbox.stats()).to.include({ queued: 0, inflight: 0, acked: 100 });
  });
});
