import { createConfig, lintFromString, type NormalizedProblem } from '@redocly/openapi-core';
import { expect } from 'chai';
import { renderOpenApi } from '../../src/api/openapi/document.js';
import { startTestApi } from '../support/api-harness.js';

/** Redocly's recommended rules over one document: every problem, one line each. */
async function lint(source: string): Promise<string[]> {
  const config = await createConfig({ extends: ['recommended'] });
  const problems: NormalizedProblem[] = await lintFromString({
    source,
    absoluteRef: '/openapi.json',
    config,
  });
  return problems.map(
    (p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location.map((l) => l.pointer).join(', ')}`,
  );
}

describe('OpenAPI document under Redocly lint (recommended rules)', () => {
  it('has no error and no warning as checked in (docs/openapi.json)', async () => {
    expect(await lint(renderOpenApi())).to.deep.equal([]);
  });

  it('has no error and no warning as a deployment serves it at /openapi.json', async () => {
    const api = await startTestApi({ PUBLIC_BASE_URL: 'https://devices.acme.test/cloud' });
    try {
      const answer = await fetch(`${api.baseUrl}/openapi.json`);
      const served = await answer.text();
      expect(JSON.parse(served)).to.nested.include({
        'servers[0].url': 'https://devices.acme.test/cloud',
        'components.securitySchemes.oauth2.flows.clientCredentials.tokenUrl':
          'https://devices.acme.test/cloud/v1/oauth/token',
      });
      expect(await lint(served)).to.deep.equal([]);
    } finally {
      await api.close();
    }
  });
});
