import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? files(full) : /\.(ts|js)$/.test(name) ? [full] : [];
  });
}

/**
 * Dead code: an export of src/ that nothing reads, neither another file (src, tests, bench, bin, tools) nor
 * its own. tsc's noUnusedLocals cannot see these, because exporting a name counts as using it.
 */
describe('dead exports', () => {
  it('every export of src/ is read somewhere', () => {
    const all = ['src', 'tests', 'bench', 'bin', 'tools'].flatMap(files);
    const text = new Map(all.map((f) => [f, readFileSync(f, 'utf8')]));
    const dead: string[] = [];
    for (const file of all.filter((f) => f.startsWith('src/'))) {
      const source = text.get(file)!;
      const declared = source.matchAll(
        /^export (?:async )?(?:const|let|function|class|abstract class|type|interface|enum) (\w+)/gm,
      );
      for (const [, name] of declared) {
        const usedHere = (source.match(new RegExp(`\\b${name}\\b`, 'g')) ?? []).length > 1;
        const word = new RegExp(`\\b${name}\\b`);
        const usedElsewhere = [...text].some(([other, body]) => other !== file && word.test(body));
        if (!usedHere && !usedElsewhere) dead.push(`${file}: ${name}`);
      }
    }
    expect(dead).to.deep.equal([]);
  });
});
