import { expect } from 'chai';
import { CONFIG_VARIABLES } from '../../src/config.js';
import { readmeTableNames } from '../support/readme.js';

/** The README's Configuration table is the operator's list of settings: each one src/config.ts reads, no other. */
describe('README configuration table', () => {
  // A row may name several variables (`A` / `B`), and other cells name defaults: first cells only.
  const documented = readmeTableNames('Configuration');

  it('has a row for every variable src/config.ts reads', () => {
    expect(CONFIG_VARIABLES.filter((v) => !documented.includes(v))).to.deep.equal([]);
  });

  it('names no variable src/config.ts does not read', () => {
    expect(documented.filter((v) => !CONFIG_VARIABLES.includes(v))).to.deep.equal([]);
  });
});
