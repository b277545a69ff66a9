import { expect } from 'chai';
import sinon from 'sinon';
import { RepeatedTimes } from '../../src/projections/repeated-times.js';

describe('RepeatedTimes', () => {
  afterEach(() => sinon.restore());

  it('gives the millisecond PostgreSQL reads for every time, parsing a run of the same text once', () => {
    const times = new RepeatedTimes();
    // Times with an offset go through Date.parse (toISOString's own form is read digit by digit).
    const parse = sinon.spy(Date, 'parse');
    const inputs = [
      '2026-11-28T05:00:00+01:00',
      '2026-11-28T05:00:00+01:00',
      '2026-11-28T04:00:00.000Z',
      '2026-11-28T06:00:00.5+02:00',
      '2026-11-28T06:00:00.5+02:00',
      '2026-11-28T05:00:00+01:00',
      '2026-11-28T04:00:00.0123456789Z',
      'not a time',
      undefined,
    ];
    const answers = inputs.map((t) => times.ms(t));
    parse.restore();
    const at = Date.UTC(2026, 10, 28, 4);
    expect(answers).to.deep.equal([at, at, at, at + 500, at + 500, at, at + 12, Number.NaN, undefined]);
    // One parse for each run of text not in toISOString's form: 05:00+01 (two), 06:00.5+02 (two), 05:00+01
    // (one), the long fraction, the text that is no time; none for toISOString's form.
    expect(parse.callCount).to.equal(5);
  });
});
