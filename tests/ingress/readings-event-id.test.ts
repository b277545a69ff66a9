import { createHash, randomBytes, randomInt } from 'node:crypto';
import { expect } from 'chai';
import { readingsEventId } from '../../src/ingress/readings/event-id.js';

/**
 * A readings message's id is how its redelivery is recognised, also across an upgrade of the service: the
 * derivation in docs/telemetry.md must give the same id forever. The vectors below were computed by an
 * implementation of that description outside this code base (Python's hashlib and uuid).
 */
describe('readings event ids', () => {
  const none = Buffer.alloc(0);

  it('are the pinned ids of messages with a seq', () => {
    expect(
      readingsEventId({ agentId: 'agt_ingest01', deviceId: 'dev_000001', seq: 0, payload: none }),
    ).to.equal('e9beebc1-4ac4-8bdf-92c8-c2018522bf9e');
    expect(
      readingsEventId({ agentId: 'agt_ingest01', deviceId: 'dev_000001', seq: 7, payload: none }),
    ).to.equal('ac92f361-c480-8a4a-8566-285f8b0eb797');
    expect(readingsEventId({ agentId: 'agt_a', deviceId: 'dev_b', seq: 4294967295, payload: none })).to.equal(
      '5edf9bbd-4ecc-82d6-b24b-3f22f1b8b8ee',
    );
    expect(readingsEventId({ agentId: 'agt_ü', deviceId: 'dev_ß', seq: 12, payload: none })).to.equal(
      '8b841ab7-f025-845c-a7d9-50483956f8ea',
    );
  });

  it('are the pinned ids of messages without a seq, from their exact bytes', () => {
    const payload = Buffer.from('{"readings":[{"capability":"environment.temperature","value":21}]}');
    const base = { agentId: 'agt_ingest01', deviceId: 'dev_000001', seq: undefined };
    expect(readingsEventId({ ...base, payload })).to.equal('53652ba5-0816-855a-8cc5-df9ac95853fa');
    expect(readingsEventId({ ...base, payload: none })).to.equal('b376044d-8117-8fb8-8bb2-cca1942a5b5f');
  });

  it('are the first 16 bytes of the sha256 as a version 8 UUID, for any message', () => {
    const variants = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const agentId = `agt_${randomBytes(4).toString('hex')}`;
      const deviceId = `dev_${randomBytes(5).toString('hex')}`;
      const seq = i % 2 === 0 ? randomInt(0, 2 ** 32) : undefined;
      const payload = randomBytes(randomInt(0, 200));
      const id = readingsEventId({ agentId, deviceId, seq, payload });
      expect(id).to.equal(reference(agentId, deviceId, seq, payload));
      variants.add(id[19]!);
    }
    // Every variant digit occurred: the bit arithmetic was checked on all four.
    expect([...variants].sort()).to.deep.equal(['8', '9', 'a', 'b']);
  });
});

/** The description in event-id.ts, written the plain way. */
function reference(agentId: string, deviceId: string, seq: number | undefined, payload: Buffer): string {
  const hash = createHash('sha256').update(`dc/v1 readings\n${agentId}\n${deviceId}\n`);
  if (seq !== undefined) hash.update(`seq ${seq}`);
  else hash.update(Buffer.concat([Buffer.from('payload '), payload]));
  const bytes = hash.digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return [hex.slice(0, 8), hex.slice(8, 12), hex.slice(12, 16), hex.slice(16, 20), hex.slice(20)].join('-');
}
