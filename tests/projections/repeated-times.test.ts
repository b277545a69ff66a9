import { expect } from 'chai';
import sinon from 'sinon';
import { RepeatedTimes } from '../../src/projections/repeated-times.js';

describe('RepeatedTimes', () => {
  afterEach(() => sinon.restore());

  it("gives Date.parse's answer for every time, parsing a run of the same text once", () => {
    const times = new RepeatedTimes();
    const parse = sinon.spy(Date, 'parse');
    const inputs = [
      '2026-11-28T04:00:00.000Z',
      '2026-11-28T04:00:00.000Z',
      '2026-11-28T05:00:00+01:00',
      '2026-11-28T05:00:00+01:00',
      '2026-11-28T04:00:00.000Z',
      'not a time',
      undefined,
    ];
    const answers = inputs.map((t) => times.ms(t));
    parse.restore();
    expect(answers).to.deep.equal(inputs.map((t) => (t === undefined ? undefined : Date.parse(t))));
    // Two runs of two, then two of one: four parses for six times (and none for no time).
    expect(parse.callCount).to.equal(4);
  });
});
