import { expect } from 'chai';
import type { Logger } from 'pino';
import sinon from 'sinon';
import { Rejections, type RejectionReason } from '../../src/ingress/broker/rejections.js';

describe('broker rejections (metrics and throttled log)', function () {
  let now: number;
  let warn: sinon.SinonSpy;
  let error: sinon.SinonSpy;
  let counted: Array<[RejectionReason, string | undefined]>;
  let rejections: Rejections;

  beforeEach(function () {
    now = 1_000_000;
    warn = sinon.spy();
    error = sinon.spy();
    counted = [];
    rejections = new Rejections({
      logger: { warn, error } as unknown as Logger,
      onRejected: (reason, agentId) => counted.push([reason, agentId]),
      now: () => now,
    });
  });

  it('counts every rejection but logs at most once per agent per minute', function () {
    for (let i = 0; i < 5; i++) rejections.report('publish_denied', 'agent-a', `attempt ${i}`);
    expect(counted).to.have.length(5);
    expect(warn.callCount).to.equal(1);

    now += 59_999;
    rejections.report('subscribe_denied', 'agent-a', '#');
    expect(warn.callCount).to.equal(1);

    now += 1;
    rejections.report('payload_rejected', 'agent-a', 'bad json');
    expect(warn.callCount).to.equal(2);
    expect(warn.secondCall.args[0]).to.include({
      reason: 'payload_rejected',
      agentId: 'agent-a',
      suppressedSinceLastLog: 5,
    });
  });

  it('throttles each agent separately', function () {
    rejections.report('publish_denied', 'agent-a', 'x');
    rejections.report('publish_denied', 'agent-b', 'x');
    rejections.report('tls_handshake', undefined, 'no certificate');
    expect(warn.callCount).to.equal(3);
  });

  it('logs infrastructure failures as errors, throttled as one source across agents', function () {
    rejections.report('uplink_failed', 'agent-a', 'store down');
    rejections.report('uplink_failed', 'agent-b', 'store down');
    rejections.report('directory_unavailable', 'agent-c', 'db down');
    expect(error.callCount).to.equal(2);
    expect(warn.callCount).to.equal(0);
    expect(counted).to.have.length(3);
  });
});
