import { expect } from 'chai';
import { Lane } from '../../src/edge-sim/lane.js';

const drain = <T>(lane: Lane<T>): (T | undefined)[] => {
  const out: (T | undefined)[] = [];
  while (lane.length > 0) out.push(lane.shift());
  return out;
};
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

describe('edge simulator outbox lane', () => {
  it('keeps the order when it grows with its items running over the end of its buffer', () => {
    // 16 is the starting capacity: ten in and out move the head to 10, so the next 16 fill slots 10-15 and
    // then 0-9; the 17th makes it grow with the oldest item behind the newest.
    const lane = new Lane<number>();
    for (const n of range(0, 10)) lane.push(n);
    expect(drain(lane)).to.deep.equal(range(0, 10));
    for (const n of range(10, 27)) lane.push(n);
    expect(lane.length).to.equal(17);
    expect(drain(lane)).to.deep.equal(range(10, 27));
  });

  it('puts a failed message back in front, across the start of its buffer and when full', () => {
    const lane = new Lane<number>();
    for (const n of range(1, 17)) lane.push(n);
    // Full (16) with the head at slot 0: the unshift makes it grow, then steps the head back over slot 0.
    lane.unshift(0);
    lane.unshift(-1);
    expect(lane.shift()).to.equal(-1);
    lane.unshift(-1);
    expect(drain(lane)).to.deep.equal(range(-1, 17));
    expect(lane.shift()).to.equal(undefined);
  });

  it('gives back what an array would over a long random mix of pushes, unshifts and shifts', () => {
    const lane = new Lane<number>();
    const reference: number[] = [];
    let seed = 7;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    let next = 0;
    let longest = 0;
    // Phases that mostly fill, then mostly drain, so the head walks round the buffer as it grows.
    for (let op = 0; op < 20_000; op++) {
      const filling = Math.floor(op / 2500) % 2 === 0;
      const r = random();
      if (r < (filling ? 0.55 : 0.25)) {
        lane.push(next);
        reference.push(next++);
      } else if (r < (filling ? 0.7 : 0.35)) {
        lane.unshift(next);
        reference.unshift(next++);
      } else {
        expect(lane.shift()).to.equal(reference.shift());
      }
      expect(lane.length).to.equal(reference.length);
      longest = Math.max(longest, reference.length);
    }
    expect(longest, 'it grew several times').to.be.greaterThan(256);
    expect(drain(lane)).to.deep.equal(reference);
  });
});
