import { execFile } from 'node:child_process';
import { chmod, lstat, mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import mqtt, { type MqttClient } from 'mqtt';
import { readAgentFiles, type AgentFiles } from '../../src/agents/agent-files.js';
import { agentStreamName } from '../../src/domain/agents/index.js';
import { connected, refused, within } from '../ingress/support/broker-fixture.js';
import { startEdgeService, type EdgeService } from '../support/edge-service.js';
import { call, siteOf } from '../support/registry.js';
import { createTenant } from '../support/tenants.js';

const run = promisify(execFile);

function connectWith(files: AgentFiles): MqttClient {
  const client = mqtt.connect(files.connection.brokerUrl, {
    protocolVersion: 4,
    clientId: files.connection.agentId,
    clean: true,
    ca: files.caPem,
    cert: files.certPem,
    key: files.keyPem,
    reconnectPeriod: 0,
    connectTimeout: 5000,
  });
  client.on('error', () => undefined);
  return client;
}

describe('devcloud agent create / revoke', function () {
  // Each case runs the CLI as a child process (up to three times in one case). Alone a run takes 2-3 s, but
  // beside the other test leg on a 2-core CI machine runs took 14-23 s, past mocha's 30 s for a case.
  this.timeout(120_000);
  let edge: EdgeService;
  let projectId: string;
  let siteId: string;
  let token: string;

  before(async () => {
    edge = await startEdgeService();
    const tenant = await createTenant(edge, ['devices:read']);
    projectId = tenant.projectId;
    token = await tenant.token();
    siteId = await siteOf(edge, projectId, 'Plant', 'Europe/Berlin');
  });
  after(() => edge.close());

  /** `devcloud agent create --json` into `dir`: its exit code and output, whether it succeeded or not. */
  async function create(dir: string): Promise<{ code: number; stdout: string; stderr: string }> {
    return run(
      process.execPath,
      [
        'bin/devcloud.js',
        'agent',
        'create',
        '--project',
        projectId,
        '--site',
        siteId,
        '--out',
        dir,
        '--json',
      ],
      { env: { ...process.env, ...edge.env } },
    ).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
  }

  /** `devcloud agent create --json` into `dir`, which must succeed: what it printed. */
  async function createdAgent(dir: string): Promise<Record<string, unknown>> {
    const done = await create(dir);
    expect(done.code, done.stderr).to.equal(0);
    return JSON.parse(done.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
  }

  /** Agents as the event store and the agents read model hold them. */
  async function registered(): Promise<{ streams: number; rows: number }> {
    await edge.catchUp();
    const streams = await edge.db.pool.query<{ n: string }>(
      'SELECT count(*) AS n FROM eventstore.streams WHERE starts_with(stream_name, $1)',
      [agentStreamName('')],
    );
    const rows = await edge.db.pool.query<{ n: string }>('SELECT count(*) AS n FROM agents');
    return { streams: Number(streams.rows[0]!.n), rows: Number(rows.rows[0]!.n) };
  }

  it('registers the agent and its hub, writes its files, and a client with them connects', async () => {
    const dir = path.join(edge.dataDir, 'agent-a');
    const printed = await createdAgent(dir);
    expect(Object.keys(printed)).to.deep.equal(['agentId', 'hubId', 'dir']);
    expect(printed.dir).to.equal(dir);
    const files = await readAgentFiles(dir);
    expect(files.connection).to.deep.include({
      agentId: printed.agentId,
      hubId: printed.hubId,
      brokerUrl: `mqtts://127.0.0.1:${edge.mqttPort}`,
      timezone: 'Europe/Berlin',
    });
    expect((await stat(path.join(dir, 'key.pem'))).mode & 0o777).to.equal(0o600);
    expect(files.keyPem).to.contain('PRIVATE KEY');

    await edge.catchUp();
    const hub = await call(edge, 'GET', `/v1/devices/${printed.hubId as string}`, { token });
    expect(hub.status).to.equal(200);
    expect(hub.body).to.include({ kind: 'hub', parent_hub_id: null, site_id: siteId, status: 'active' });

    const client = connectWith(files);
    await connected(client);
    await client.endAsync();
  });

  it('an existing cert.pem: exit 1, nothing registered, no key.pem left, the file untouched', async () => {
    const dir = path.join(edge.dataDir, 'agent-taken');
    await mkdir(dir, { mode: 0o700 });
    await writeFile(path.join(dir, 'cert.pem'), 'not yours\n');
    const before = await registered();
    const failed = await create(dir);
    expect(await registered(), 'registered').to.deep.equal(before);
    expect(failed.code, failed.stdout).to.equal(1);
    expect(failed.stderr).to.equal(
      `devcloud: agent create: ${path.join(dir, 'cert.pem')} already exists; nothing was registered\n`,
    );
    expect(await readdir(dir)).to.deep.equal(['cert.pem']);
    expect(await readFile(path.join(dir, 'cert.pem'), 'utf8')).to.equal('not yours\n');
  });

  it('a symlink in place of a file: exit 1, nothing registered, the link not followed, nothing left', async () => {
    const dir = path.join(edge.dataDir, 'agent-symlink');
    await mkdir(dir, { mode: 0o700 });
    const elsewhere = path.join(edge.dataDir, 'stolen-key.pem');
    await symlink(elsewhere, path.join(dir, 'key.pem'));
    const before = await registered();
    const failed = await create(dir);
    expect(await registered(), 'registered').to.deep.equal(before);
    expect(failed.code, failed.stdout).to.equal(1);
    expect(failed.stderr).to.match(/key\.pem already exists; nothing was registered\n$/);
    expect(await readdir(dir)).to.deep.equal(['key.pem']);
    expect(await lstat(elsewhere).catch(() => 'absent')).to.equal('absent');
  });

  it('a directory every user may write to is refused, saying so; nothing registered, nothing written', async () => {
    const dir = path.join(edge.dataDir, 'agent-open');
    await mkdir(dir);
    await chmod(dir, 0o777);
    const before = await registered();
    const failed = await create(dir);
    expect(await registered(), 'registered').to.deep.equal(before);
    expect(failed.code, failed.stdout).to.equal(1);
    expect(failed.stderr).to.equal(
      `devcloud: agent create: ${dir} is writable by every user: choose a directory only its owner can write to; nothing was registered\n`,
    );
    expect(await readdir(dir)).to.deep.equal([]);
  });

  it('the success path prints the id and leaves exactly the four files, the key 0600', async () => {
    const dir = path.join(edge.dataDir, 'agent-fresh', 'nested');
    const before = await registered();
    const printed = await createdAgent(dir);
    expect(printed.agentId).to.match(/^agt_/);
    expect(await registered()).to.deep.equal({ streams: before.streams + 1, rows: before.rows + 1 });
    expect((await readdir(dir)).sort()).to.deep.equal(['agent.json', 'ca.pem', 'cert.pem', 'key.pem']);
    expect((await stat(path.join(dir, 'key.pem'))).mode & 0o777).to.equal(0o600);
    expect((await stat(dir)).mode & 0o777).to.equal(0o700);
    expect((await readAgentFiles(dir)).connection.agentId).to.equal(printed.agentId);
  });

  it('refuses an unknown project or a site of another project in one line, exit code 1', async () => {
    const other = await createTenant(edge, ['devices:read']);
    const otherSite = await siteOf(edge, other.projectId);
    for (const [project, site] of [
      ['prj_doesnotexist0000', siteId],
      [projectId, 'site_doesnotexist'],
      [projectId, otherSite],
    ]) {
      const failure = await run(
        process.execPath,
        [
          'bin/devcloud.js',
          'agent',
          'create',
          '--project',
          project!,
          '--site',
          site!,
          '--out',
          path.join(edge.dataDir, 'never'),
        ],
        { env: { ...process.env, ...edge.env } },
      ).then(
        () => undefined,
        (error: { code: number; stderr: string }) => error,
      );
      expect(failure?.code).to.equal(1);
      expect(failure!.stderr.trim().split('\n')).to.have.length(1);
      expect(failure!.stderr).to.match(/^devcloud: (project|site) not found/);
    }
  });

  it('revoke: the live connection is closed and the agent is refused from then on', async () => {
    const dir = path.join(edge.dataDir, 'agent-b');
    const { agentId } = await createdAgent(dir);
    const files = await readAgentFiles(dir);
    await edge.catchUp();
    const live = connectWith(files);
    await connected(live);

    // Heard from before the revocation, bounded only from when the CLI has recorded it: a CLI process's
    // start-up under load is not the broker's delay to answer for (and a bound that ran out while the CLI
    // still ran would reject with no one awaiting it).
    const ended = new Promise<void>((resolve) => live.once('close', () => resolve()));
    expect(await edge.cli('agent', 'revoke', agentId as string)).to.deep.include({ agentId, revoked: true });
    await within(ended, 10_000, 'the revoked connection closed');
    expect(await refused(connectWith(files))).to.match(/Not authorized|closed/);
    // Revoking again changes nothing.
    expect(await edge.cli('agent', 'revoke', agentId as string)).to.deep.include({ alreadyRevoked: true });
  });
});
