import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';
import openapiTS, { astToString } from 'openapi-typescript';

const run = promisify(execFile);
const tsc = fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url));

/**
 * What an application writes against the generated types: a typed fetch wrapper, no casts. It compiles
 * only if the document types query parameters, bodies and answers as the API takes and sends them.
 */
const CLIENT = `
import type { components, paths } from './api.js';

type DeviceQuery = NonNullable<paths['/v1/devices']['get']['parameters']['query']>;
type DeviceList = paths['/v1/devices']['get']['responses'][200]['content']['application/json'];
type CommandRequest = components['schemas']['CommandRequest'];
type CommandAnswer =
  paths['/v1/devices/{publicId}/commands']['post']['responses'][201]['content']['application/json'];

export class DeviceCloud {
  constructor(
    private readonly baseUrl: string,
    private readonly token: string,
  ) {}

  private async json<T>(path: string, init: RequestInit = {}): Promise<T> {
    const headers = { Authorization: \`Bearer \${this.token}\`, 'Content-Type': 'application/json' };
    const answer = await fetch(this.baseUrl + path, { ...init, headers });
    if (!answer.ok) throw new Error(\`\${path}: \${answer.status}\`);
    const body: T = await answer.json();
    return body;
  }

  listDevices(query: DeviceQuery): Promise<DeviceList> {
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(query)) if (value !== undefined) search.set(name, String(value));
    return this.json(\`/v1/devices?\${search.toString()}\`);
  }

  sendCommand(publicId: string, command: CommandRequest): Promise<CommandAnswer> {
    return this.json(\`/v1/devices/\${encodeURIComponent(publicId)}/commands\`, {
      method: 'POST',
      body: JSON.stringify(command),
    });
  }
}

export async function switchFirstDeviceOn(cloud: DeviceCloud): Promise<string | undefined> {
  const page = await cloud.listDevices({ limit: 5 });
  const first = page.devices[0];
  if (first === undefined) return undefined;
  const answer = await cloud.sendCommand(first.id, {
    capabilityKey: 'switch.on_off',
    value: true,
    mode: 'desired',
    ttlSeconds: 60,
  });
  const commandId: string = answer.command.commandId;
  return commandId;
}
`;

describe('OpenAPI document through openapi-typescript', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'openapi-client-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('generates types a small client compiles against under tsc --strict, without casts', async function () {
    this.timeout(120_000);
    const document = await readFile(new URL('../../docs/openapi.json', import.meta.url), 'utf8');
    await writeFile(join(dir, 'api.ts'), astToString(await openapiTS(document)));
    await writeFile(join(dir, 'client.ts'), CLIENT);
    expect(CLIENT).not.to.match(/\bas\s+(?!const\b)[A-Za-z{[]/, 'the client must not cast');
    const flags = ['--strict', '--noEmit', '--target', 'es2022', '--module', 'nodenext'];
    const compiled = await run(process.execPath, [tsc, ...flags, '--lib', 'es2022,dom', 'client.ts'], {
      cwd: dir,
    }).then(
      () => '',
      (failure: { stdout?: string }) => failure.stdout ?? String(failure),
    );
    expect(compiled, compiled).to.equal('');
  });
});
