import { readdirSync, readFileSync, statSync } from 'node:fs';
import { expect } from 'chai';

/** The first cell of every row of the README's Layout table: the paths it names in backticks. */
function layoutPaths(readme: string): string[] {
  const section = readme.split(/^## /m).find((s) => s.startsWith('Layout\n'));
  if (section === undefined) throw new Error('README.md has no "## Layout" section');
  return section
    .split('\n')
    .filter((line) => line.startsWith('|'))
    .flatMap((line) => [...(line.split('|')[1] ?? '').matchAll(/`([^`]+)`/g)].map((m) => m[1]!));
}

/**
 * The README's Layout table is the map of the code: every folder directly under src/ has its row, and no
 * row names a folder of src/ that is gone.
 */
describe('README layout table', () => {
  const named = layoutPaths(readFileSync('README.md', 'utf8'));
  const inSrc = named.filter((p) => p.startsWith('src/'));

  it('lists every folder under src/', () => {
    const folders = readdirSync('src', { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => `src/${e.name}`);
    expect(folders.filter((f) => !inSrc.includes(f))).to.deep.equal([]);
  });

  it('names only folders of src/ that exist', () => {
    const exists = (p: string) => statSync(p, { throwIfNoEntry: false })?.isDirectory() === true;
    expect(inSrc.filter((p) => !exists(p))).to.deep.equal([]);
  });
});
