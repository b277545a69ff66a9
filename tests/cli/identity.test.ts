import { expect } from 'chai';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import { devcloud, type Run } from '../support/devcloud.js';

function json(run: Run): Record<string, unknown> {
  expect(run.code, run.stderr).to.equal(0);
  const lines = run.stdout.trim().split('\n');
  expect(lines, run.stdout).to.have.length(1);
  return JSON.parse(lines[0]!) as Record<string, unknown>;
}

async function token(api: TestApi, clientId: string, clientSecret: string) {
  const response = await fetch(`${api.baseUrl}/v1/oauth/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: clientId,
      client_secret: clientSecret,
    }),
    signal: AbortSignal.timeout(10_000),
  });
  return response.status;
}

/** `devcloud client create --project P --scopes S ...more`: every client the suite creates or is refused. */
const createClient = (api: TestApi, projectId: string, scopes: string, ...more: string[]) =>
  devcloud(api, 'client', 'create', '--project', projectId, '--scopes', scopes, ...more);

describe('devcloud project / client / keys', function () {
  this.timeout(120_000);
  let api: TestApi;
  let projectId: string;
  let client: { clientId: string; clientSecret: string; scopes: string[] };

  before(async () => {
    api = await startTestApi();
    projectId = json(await devcloud(api, 'project', 'create', '--name', 'Acme Heating', '--json'))
      .projectId as string;
    client = json(
      await createClient(api, projectId, 'telemetry:read devices:read', '--name', 'billing', '--json'),
    ) as typeof client;
  });
  after(async () => {
    await api.close();
  });

  it('project create prints one JSON object with an opaque prefixed id', () => {
    expect(projectId).to.match(/^prj_[A-Za-z0-9_-]{22}$/);
  });

  it('client create prints the id, the secret (once) and the scopes; the secret works at the token endpoint', async () => {
    expect(client.clientId).to.match(/^cli_[A-Za-z0-9_-]{22}$/);
    expect(client.clientSecret).to.match(/^dcs_[A-Za-z0-9_-]{43}$/);
    expect(client.scopes).to.deep.equal(['devices:read', 'telemetry:read']);
    expect(await token(api, client.clientId, client.clientSecret)).to.equal(200);
  });

  it('refuses an unknown scope or project with one line and exit code 1', async () => {
    // Refusals write nothing, so the three CLI runs (seconds of start-up each) go side by side.
    const [badScope, badProject, badAuth] = await Promise.all([
      createClient(api, projectId, 'devices:read root'),
      createClient(api, 'prj_nothere', 'devices:read'),
      createClient(api, projectId, 'devices:read', '--auth', 'jwt'),
    ]);
    expect(badScope.code).to.equal(1);
    expect(badScope.stderr.trim().split('\n')).to.have.length(1);
    expect(badScope.stderr).to.contain('unknown scope root');
    expect(badProject.code).to.equal(1);
    expect(badProject.stderr.trim()).to.equal('devcloud: no project prj_nothere');
    expect(badAuth.code).to.equal(1);
  });

  it('client list shows the clients and never a secret or a hash', async () => {
    const run = await devcloud(api, 'client', 'list', '--project', projectId, '--json');
    const listed = json(run) as { projectId: string; clients: Record<string, unknown>[] };
    expect(listed.projectId).to.equal(projectId);
    expect(listed.clients).to.have.length(1);
    expect(listed.clients[0]).to.include({
      clientId: client.clientId,
      name: 'billing',
      authMethod: 'post',
      revokedAt: null,
    });
    expect(run.stdout).not.to.contain(client.clientSecret);
    expect(run.stdout).not.to.contain('scrypt');
  });

  it('client revoke stops the client at the token endpoint at once', async () => {
    const doomed = json(
      await createClient(api, projectId, 'devices:read', '--auth', 'basic', '--json'),
    ) as typeof client;
    expect(json(await devcloud(api, 'client', 'revoke', doomed.clientId, '--json'))).to.include({
      clientId: doomed.clientId,
      revoked: true,
    });
    expect(await token(api, doomed.clientId, doomed.clientSecret)).to.equal(401);
    const unknown = await devcloud(api, 'client', 'revoke', 'cli_nobody');
    expect(unknown.code).to.equal(1);
  });

  it('keys rotate names the new signing key and the one it retired', async () => {
    expect(await token(api, client.clientId, client.clientSecret)).to.equal(200); // a key exists now
    const rotation = json(await devcloud(api, 'keys', 'rotate', '--json'));
    expect(rotation.kid).to.be.a('string');
    expect(rotation.retired).to.have.length(1);
    expect(rotation.pruned).to.deep.equal([]);
  });

  it('keys revoke removes a key at once and names an unknown one', async () => {
    const rotation = json(await devcloud(api, 'keys', 'rotate', '--json'));
    // `--`: a key id is a base64url thumbprint, and one in 64 begins with '-'.
    const revoked = json(await devcloud(api, 'keys', 'revoke', '--json', '--', String(rotation.kid)));
    expect(revoked).to.deep.equal({ kid: rotation.kid, revoked: true });
    const { rows } = await api.db.pool.query(
      'SELECT revoked_at, private_jwk FROM auth.signing_keys WHERE kid = $1',
      [rotation.kid],
    );
    expect(rows[0]).to.include({ private_jwk: null });
    expect(rows[0].revoked_at).to.be.instanceOf(Date);
    // Both refused, nothing written: side by side.
    const [unknown, dashed] = await Promise.all([
      devcloud(api, 'keys', 'revoke', 'nope'),
      devcloud(api, 'keys', 'revoke', '--', '-nope'),
    ]);
    expect(dashed.code).to.equal(1);
    expect(dashed.stderr).to.contain('no signing key -nope');
    expect(unknown.code).to.equal(1);
    expect(unknown.stderr).to.contain('no signing key nope');
  });
});
