import path from 'node:path';
import { expect } from 'chai';
import { ESLint } from 'eslint';

/** The lines of an import each: the lab's folders, seen from a nested file of src/. */
const LAB_IMPORTS = [
  "import { runSoak } from '../../tools/soak/soak.js';",
  "import { until } from '../../tests/support/edge-agent.js';",
  "import { benchmarks } from '../../bench/support.js';",
  "import { LiveClient } from '../../examples/live-client/client.js';",
  "export { Topology } from '../../tools/scale-out/topology.js';",
].join('\n');

/**
 * The product (src/) imports nothing from the tooling built on it (tools, tests, bench, examples): an import
 * running that way is refused by the linter wherever it sits in src/, and the tooling may import src/ freely.
 */
describe('src/ imports no tooling', function () {
  this.timeout(60_000);

  async function restricted(filePath: string, code: string): Promise<number[]> {
    const eslint = new ESLint({ cwd: process.cwd() });
    const [result] = await eslint.lintText(code, { filePath: path.resolve(filePath) });
    return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.line);
  }

  it('refuses an import of tools, tests, bench or examples from a file of src/', async () => {
    expect(await restricted('src/api/live/stream-check.ts', LAB_IMPORTS)).to.deep.equal([1, 2, 3, 4, 5]);
  });

  it('lets src/ import itself, and the tooling import src/', async () => {
    const own = "import { freePort } from '../../infra/ports.js';\nexport const p = freePort;\n";
    expect(await restricted('src/api/live/stream-check.ts', own)).to.deep.equal([]);
    const lab = "import { freePort } from '../../src/infra/ports.js';\nexport const p = freePort;\n";
    expect(await restricted('tools/soak/port-check.ts', lab)).to.deep.equal([]);
  });
});
