import { expect } from 'chai';
import { camelCased } from '../../src/infra/postgres/camel-cased.js';

describe('read-model rows become records under camelCase names', () => {
  it('renames every snake_case column and keeps its value as pg returned it', () => {
    const at = new Date('2026-03-01T10:00:00.000Z');
    const record = camelCased({
      session_id: 'ps-1',
      close_reason: null,
      parent_hub_id: 'dev_hub',
      opened_at: at,
    });
    expect(record).to.deep.equal({
      sessionId: 'ps-1',
      closeReason: null,
      parentHubId: 'dev_hub',
      openedAt: at,
    });
    expect(record.openedAt).to.equal(at);
  });

  it('leaves one-word columns and digits after an underscore as they are named', () => {
    expect(camelCased({ state: 'open', value: 3, unit_2: 'W' })).to.deep.equal({
      state: 'open',
      value: 3,
      unit2: 'W',
    });
  });
});
