import { expect } from 'chai';
import { TokenBuckets } from '../../src/infra/token-buckets.js';

describe('token buckets', () => {
  it('allow the burst, then one request per 1/rate seconds, with the wait in whole seconds', () => {
    let now = 0;
    const buckets = new TokenBuckets({ ratePerSecond: 30, burst: 60, now: () => now });
    for (let i = 0; i < 60; i++) expect(buckets.take('a')).to.equal(0);
    expect(buckets.take('a')).to.equal(1);
    now += 34; // one token is 33.3 ms at 30/s
    expect(buckets.take('a')).to.equal(0);
    expect(buckets.take('a')).to.equal(1);
    expect(buckets.take('b')).to.equal(0);
  });

  it('report a longer wait when the rate is slow', () => {
    const buckets = new TokenBuckets({ ratePerSecond: 0.25, burst: 1, now: () => 0 });
    expect(buckets.take('a')).to.equal(0);
    expect(buckets.take('a')).to.equal(4);
  });

  it('forget buckets that have refilled, so idle clients cost no memory', () => {
    let now = 0;
    const buckets = new TokenBuckets({ ratePerSecond: 30, burst: 60, now: () => now });
    for (let i = 0; i < 1000; i++) buckets.take(`10.0.${i >> 8}.${i & 255}`);
    expect(buckets.size).to.equal(1000);
    now += 2500;
    buckets.take('10.9.9.9');
    expect(buckets.size).to.equal(1);
  });

  it('never hold more than maxKeys buckets, dropping the least recently seen', () => {
    const buckets = new TokenBuckets({ ratePerSecond: 30, burst: 2, now: () => 0, maxKeys: 3 });
    for (const key of ['a', 'b', 'c']) buckets.take(key);
    buckets.take('a');
    buckets.take('a');
    expect(buckets.take('a')).to.equal(1);
    buckets.take('d'); // evicts b, the least recently seen
    expect(buckets.size).to.equal(3);
    expect(buckets.take('a')).to.equal(1); // a was kept, still empty
  });
});

describe('token buckets: reservations (the readings quota)', () => {
  it('cover a cost from the bucket at once, then go into debt and answer the wait until it is paid', () => {
    let now = 0;
    const buckets = new TokenBuckets({ ratePerSecond: 40, burst: 20, now: () => now });
    expect(buckets.reserve('agent', 15)).to.equal(0);
    expect(buckets.reserve('agent', 5)).to.equal(0);
    expect(buckets.reserve('agent', 1)).to.equal(25); // one reading at 40/s
    expect(buckets.reserve('agent', 10)).to.equal(275); // queued behind the first
    expect(buckets.reserve('other', 20)).to.equal(0);
    now += 275;
    expect(buckets.reserve('agent', 4)).to.equal(100);
  });

  it('take a cost larger than the burst, and only make it wait longer', () => {
    const buckets = new TokenBuckets({ ratePerSecond: 100, burst: 10, now: () => 0 });
    expect(buckets.reserve('agent', 500)).to.equal(4900);
  });

  it('give back what a cancelled reservation spent, never beyond the burst', () => {
    const buckets = new TokenBuckets({ ratePerSecond: 10, burst: 5, now: () => 0 });
    buckets.reserve('agent', 5);
    expect(buckets.reserve('agent', 3)).to.equal(300);
    buckets.refund('agent', 3);
    expect(buckets.reserve('agent', 1)).to.equal(100);
    buckets.refund('agent', 100);
    expect(buckets.reserve('agent', 5)).to.equal(0);
  });

  it('keep a bucket in debt until it has refilled, however long the sweep interval', () => {
    let now = 0;
    const buckets = new TokenBuckets({ ratePerSecond: 10, burst: 10, now: () => now });
    buckets.reserve('agent', 40); // 3 s of debt beyond an empty bucket
    now += 2000;
    buckets.reserve('other', 1); // sweeps: the agent has not refilled yet
    expect(buckets.size).to.equal(2);
    expect(buckets.reserve('agent', 0)).to.equal(1000);
  });
});
