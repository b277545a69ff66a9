import { Writable } from 'node:stream';
import { expect } from 'chai';
import { pino } from 'pino';
import { connectRedis } from '../../src/infra/redis/connect.js';
import { REDIS_URL, redisProxy, requireRedis } from '../support/redis.js';

/** A logger whose lines the test reads. */
function capturingLogger() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { logger: pino({ level: 'warn' }, sink), lines };
}

describe('Redis connections (real Redis)', function () {
  before(async function () {
    await requireRedis(this);
  });

  it('a refused password is named as the reason, and the password is in no log line and no error', async () => {
    const secret = 'not-the-password-4f1c9a';
    const url = new URL(REDIS_URL);
    url.username = 'device-cloud';
    url.password = secret;
    const { logger, lines } = capturingLogger();
    const error = await connectRedis(url.toString(), { role: 'test', timeoutMs: 2000 }, logger).then(
      (redis) => {
        redis.disconnect();
        return undefined;
      },
      (e: unknown) => e as Error,
    );
    expect(error, 'the connection was refused').to.be.instanceOf(Error);
    expect(error!.message).to.match(/cannot reach Redis for test: .*(WRONGPASS|AUTH|password)/i);
    expect(lines.length, 'the refusal was logged').to.be.greaterThan(0);
    for (const text of [error!.message, String(error!.stack), ...lines]) expect(text).not.to.include(secret);
  });

  it('a connection whose Redis goes away reconnects by itself once it is back', async () => {
    const proxy = await redisProxy();
    const { logger, lines } = capturingLogger();
    const redis = await connectRedis(proxy.url, { role: 'test' }, logger);
    try {
      expect(await redis.ping()).to.equal('PONG');
      proxy.cut();
      const deadline = Date.now() + 5000;
      while (redis.status === 'ready' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(redis.status, 'the connection was lost').not.to.equal('ready');
      proxy.restore();
      expect(await redis.ping()).to.equal('PONG');
      expect(lines.join('')).not.to.include('"command"');
    } finally {
      redis.disconnect();
      proxy.close();
    }
  });
});
