import { readdirSync, statSync } from 'node:fs';
import { expect } from 'chai';
import { readmeTableNames } from '../support/readme.js';

/** The folders each listed one by one: the product's (src/) and the lab's built on it (tools/). */
const MAPPED = ['src', 'tools'];

/**
 * The README's Layout table is the map of the code: every folder directly under src/ and tools/ has its row,
 * and no row names a folder of theirs that is gone.
 */
describe('README layout table', () => {
  const named = readmeTableNames('Layout');

  for (const root of MAPPED) {
    const rows = named.filter((p) => p.startsWith(`${root}/`));

    it(`lists every folder under ${root}/`, () => {
      const folders = readdirSync(root, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => `${root}/${e.name}`);
      expect(folders.filter((f) => !rows.includes(f))).to.deep.equal([]);
    });

    it(`names only folders of ${root}/ that exist`, () => {
      const exists = (p: string) => statSync(p, { throwIfNoEntry: false })?.isDirectory() === true;
      expect(rows.filter((p) => !exists(p))).to.deep.equal([]);
    });
  }
});
