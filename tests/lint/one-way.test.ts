import path from 'node:path';
import { expect } from 'chai';
import { ESLint } from 'eslint';

/**
 * Two directions the code must keep: the write side decides from its own streams, never from a read
 * model; and readings go broker -> uplink -> ingest, parsed once, so the ingest imports nothing back from
 * the broker or the uplink. Each import is linted as if it lived where it is named.
 */
describe('one-way lint rules', function () {
  this.timeout(60_000);

  async function refusedLines(filePath: string, imports: readonly string[]) {
    const code = imports.map((from, i) => `import * as m${i} from '${from}';\nexport { m${i} };\n`).join('');
    const eslint = new ESLint({ cwd: process.cwd() });
    const [result] = await eslint.lintText(code, { filePath: path.resolve(filePath) });
    return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.line);
  }

  it('refuses a read model on the write side, however deep the importing file sits', async () => {
    for (const file of ['src/control/x.ts', 'src/registry/x.ts', 'src/pairing/x.ts', 'src/agents/x.ts']) {
      expect(await refusedLines(file, ['../projections/devices/queries.js']), file).to.deep.equal([1]);
    }
    expect(await refusedLines('src/ingress/uplink.ts', ['../projections/agents/queries.js'])).to.deep.equal([
      1,
    ]);
    expect(
      await refusedLines('src/ingress/readings/x.ts', ['../../projections/devices/queries.js']),
    ).to.deep.equal([1]);
  });

  it('refuses the broker and the uplink in readings ingest, and lets it use its own and the shared files', async () => {
    const lines = await refusedLines('src/ingress/readings/x.ts', [
      '../broker/topics.js',
      '../uplink.js',
      './event-id.js',
      '../rejected-message.js',
      '../../domain/readings/index.js',
    ]);
    expect(lines).to.deep.equal([1, 3]);
  });

  it('leaves the read side and the routing lookups alone', async () => {
    expect(await refusedLines('src/api/routes/x.ts', ['../../projections/devices/queries.js'])).to.deep.equal(
      [],
    );
    expect(
      await refusedLines('src/ingress/control/x.ts', ['../../projections/agents/queries.js']),
    ).to.deep.equal([]);
  });
});
