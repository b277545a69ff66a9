import { expect } from 'chai';
import { compareLiveFrames, sawNoGap, type StreamFrame } from '../../tools/soak/live-check.js';

const frame = (n: number, text = `reading ${n}`): StreamFrame => ({
  id: `id${String(n).padStart(4, '0')}`,
  text,
});
const STORE = [1, 2, 3, 4, 5, 6].map((n) => frame(n));
const from = (...ns: number[]) => ns.map((n) => frame(n));

/** The soak's live check: each client's frames against the store's, from the client's first frame on. */
describe('soak live check: comparing clients with the store', () => {
  it('passes clients that joined at different frames and missed nothing', () => {
    const result = compareLiveFrames([from(1, 2, 3, 4, 5, 6), from(3, 4, 5, 6)], STORE);
    expect(result).to.include({
      framesCompared: 10,
      gaps: 0,
      duplicates: 0,
      outOfOrder: 0,
      clientsDiffering: 0,
    });
    expect(sawNoGap(result)).to.equal(true);
  });

  it('fails a client that missed a frame', () => {
    const result = compareLiveFrames([from(2, 3, 4, 5, 6), from(2, 3, 5, 6)], STORE);
    expect(result).to.include({ gaps: 1, duplicates: 0, outOfOrder: 0, clientsDiffering: 1 });
    expect(result.mismatches[0]).to.deep.include({ client: 1, at: 2, lengths: [4, 5] });
    expect(sawNoGap(result)).to.equal(false);
  });

  it('fails a client that missed the last frames (it did not catch up)', () => {
    const result = compareLiveFrames([from(2, 3, 4)], STORE);
    expect(result).to.include({ gaps: 2, clientsDiffering: 1 });
    expect(sawNoGap(result)).to.equal(false);
  });

  it('fails a client that received a frame twice', () => {
    const result = compareLiveFrames([from(2, 3, 4, 4, 5, 6)], STORE);
    expect(result).to.include({ gaps: 0, duplicates: 1, outOfOrder: 1, clientsDiffering: 1 });
    expect(sawNoGap(result)).to.equal(false);
  });

  it('fails a client that received its first frame again (a resume that went back one)', () => {
    const result = compareLiveFrames([from(2, 3, 2, 3, 4, 5, 6)], STORE);
    expect(result).to.include({ gaps: 0, duplicates: 2, outOfOrder: 1 });
    expect(sawNoGap(result)).to.equal(false);
  });

  it('fails frames out of order, altered, or unknown to the store, and a client that received nothing', () => {
    expect(compareLiveFrames([from(1, 3, 2, 4, 5, 6)], STORE)).to.include({ outOfOrder: 1, gaps: 0 });
    const altered = [frame(1), frame(2, 'reading 2, changed'), ...from(3, 4, 5, 6)];
    expect(compareLiveFrames([altered], STORE)).to.include({ altered: 1, gaps: 0, clientsDiffering: 1 });
    expect(compareLiveFrames([[...from(4, 5, 6), frame(7)]], STORE)).to.include({ unknown: 1, gaps: 0 });
    expect(compareLiveFrames([[frame(9), ...from(5, 6)]], STORE)).to.include({
      unknown: 1,
      clientsDiffering: 1,
    });
    const silent = compareLiveFrames([from(1, 2, 3, 4, 5, 6), []], STORE);
    expect(silent).to.include({ silentClients: 1, gaps: 0 });
    expect(sawNoGap(silent)).to.equal(false);
  });
});
