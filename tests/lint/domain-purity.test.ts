import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { ESLint } from 'eslint';

/**
 * src/domain may import only zod and other files of src/domain, however deep the importing file sits. The
 * fixture holds one import of each forbidden kind and is linted as if it lived in src/domain/readings/.
 */
describe('domain purity lint rule', function () {
  this.timeout(60_000);

  async function lintAs(filePath: string, code: string) {
    const eslint = new ESLint({ cwd: process.cwd() });
    const [result] = await eslint.lintText(code, { filePath: path.resolve(filePath) });
    return result!.messages.filter((m) => m.ruleId === 'local/domain-purity');
  }

  it('refuses every import that leaves src/domain, nested paths and packages alike', async () => {
    const code = readFileSync('tests/fixtures/lint/impure-domain.ts', 'utf8');
    const messages = await lintAs('src/domain/readings/impure-domain.ts', code);
    expect(messages.map((m) => m.line).sort((a, b) => a - b)).to.deep.equal([3, 4, 5, 6, 7, 8, 11]);
  });

  it('lets the domain import zod and itself', async () => {
    const code = `import { z } from 'zod';\nimport { InvalidInput } from '../errors.js';\nimport { SCOPES } from '../identity/scopes.js';\nexport const x = [z, InvalidInput, SCOPES];\n`;
    expect(await lintAs('src/domain/readings/pure.ts', code)).to.deep.equal([]);
  });

  it('the same imports outside src/domain are not its business', async () => {
    const code = readFileSync('tests/fixtures/lint/impure-domain.ts', 'utf8');
    expect(await lintAs('src/projections/readings/impure-domain.ts', code)).to.deep.equal([]);
  });
});
