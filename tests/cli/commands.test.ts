import { expect } from 'chai';
import sinon from 'sinon';
import { isGroup, type Command } from '../../src/cli/command.js';
import { COMMANDS, runCli } from '../../src/cli/program.js';

/**
 * What each command takes, written out here rather than read from the declarations, so a declaration that
 * loses or gains an option fails this test.
 */
const EXPECTED: Record<string, string[]> = {
  serve: ['--roles'],
  migrate: ['--json'],
  'projections status': ['--json'],
  'projections rebuild': ['--json'],
  'projections partition': ['--json'],
  'project create': ['--name', '--json'],
  'client create': ['--project', '--scopes', '--auth', '--name', '--json'],
  'client list': ['--project', '--json'],
  'client revoke': ['--json'],
  'keys rotate': ['--json'],
  'keys revoke': ['--json'],
  'site create': ['--project', '--name', '--timezone', '--json'],
  'agent create': ['--project', '--site', '--out', '--json'],
  'agent revoke': ['--json'],
  'device profile': ['--reason', '--json'],
  'device status': ['--reason', '--json'],
  'pairing clear-rejection': ['--hub', '--ieee', '--json'],
  'edge-sim': [
    '--agent',
    '--devices',
    '--rate',
    '--duration',
    '--seed',
    '--fail-capabilities',
    '--fail-rate',
    '--apply-delay-ms',
    '--ack-delay-ms',
    '--json',
  ],
  'audit grants': ['--project', '--device', '--from', '--to', '--as-of', '--checkpoints', '--json'],
  'audit commands': ['--project', '--device', '--from', '--to', '--checkpoints', '--json'],
  'audit verify': ['--bundle', '--project', '--from', '--to', '--trusted-keys', '--threads', '--json'],
  'audit export': ['--project', '--from', '--to', '--out', '--json'],
  'audit head': ['--project', '--json'],
  'audit keys': ['--out', '--json'],
};

/** Every option some command takes. */
const ALL_FLAGS = [...new Set(Object.values(EXPECTED).flat())];

function leaves(): [string, Command][] {
  return COMMANDS.flatMap((entry) =>
    isGroup(entry)
      ? entry.subcommands.map((c): [string, Command] => [`${entry.name} ${c.name}`, c])
      : [[entry.name, entry] as [string, Command]],
  );
}

async function cli(...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

/** The flags in the options section of a help text, in order. */
function optionsOf(help: string): string[] {
  const section = help.slice(help.indexOf('\nOptions:\n'));
  return (section.match(/^ {2}(-\w, )?--[\w-]+/gm) ?? []).map((line) => line.trim());
}

describe('devcloud: each command takes its own options', () => {
  let runs: sinon.SinonStub[];
  beforeEach(() => {
    // Nothing here may reach a command: a refusal or a help comes first.
    runs = leaves().map(([, command]) => sinon.stub(command, 'run').resolves());
  });
  afterEach(() => sinon.restore());

  it('knows every command this test expects, and no other', () => {
    expect(leaves().map(([path]) => path)).to.have.members(Object.keys(EXPECTED));
  });

  for (const [path, flags] of Object.entries(EXPECTED)) {
    const words = path.split(' ');

    it(`${path} --help lists exactly its options; devcloud help ${path} says the same`, async () => {
      const help = await cli(...words, '--help');
      expect(help.code).to.equal(0);
      expect(help.stderr).to.equal('');
      expect(help.stdout).to.match(new RegExp(`^Usage: devcloud ${path}\\b`));
      expect(optionsOf(help.stdout)).to.deep.equal([...flags, '-h, --help']);
      expect((await cli('help', ...words)).stdout).to.equal(help.stdout);
      expect((await cli(...words, '-h')).stdout).to.equal(help.stdout);
    });

    it(`${path} refuses a flag it does not take, in one line with exit code 1`, async () => {
      const foreign = ALL_FLAGS.filter((flag) => !flags.includes(flag));
      for (const flag of ['--bogus', ...foreign]) {
        const run = await cli(...words, flag, 'x');
        expect(run.code, flag).to.equal(1);
        expect(run.stdout).to.equal('');
        expect(run.stderr).to.equal(`devcloud: ${path} does not take ${flag}; see devcloud ${path} --help\n`);
      }
      const inline = await cli(...words, '--bogus=3', '-x');
      expect(inline.stderr).to.equal(
        `devcloud: ${path} does not take --bogus; see devcloud ${path} --help\n`,
      );
      const short = await cli(...words, '-x');
      expect(short.stderr).to.equal(`devcloud: ${path} does not take -x; see devcloud ${path} --help\n`);
      expect(runs.every((run) => run.notCalled)).to.equal(true);
    });
  }

  it('a group without its subcommand: --help lists its subcommands, anything else is refused', async () => {
    const help = await cli('client', '--help');
    expect(help.code).to.equal(0);
    expect(help.stdout).to.match(/^Usage: devcloud client <create\|list\|revoke>/);
    // Each subcommand with its required options, then what it does.
    expect(help.stdout).to.match(/^ {2}client create --project ID --scopes "S1 S2" +create an OAuth client/m);
    expect((await cli('help', 'client')).stdout).to.equal(help.stdout);
    const bare = await cli('client', 'rename');
    expect(bare).to.deep.include({ code: 1, stdout: '' });
    expect(bare.stderr).to.equal(
      'devcloud: client: expected create, list or revoke, got rename; see devcloud client --help\n',
    );
  });

  it('devcloud --help lists every command; an unknown command or a bare option is refused', async () => {
    const help = await cli('--help');
    expect(help.code).to.equal(0);
    for (const path of Object.keys(EXPECTED)) expect(help.stdout).to.match(new RegExp(`^  ${path}\\b`, 'm'));
    expect((await cli()).stdout).to.equal(help.stdout);
    expect((await cli('help')).stdout).to.equal(help.stdout);
    for (const argv of [['frobnicate'], ['frobnicate', '--help'], ['help', 'frobnicate']]) {
      expect(await cli(...argv)).to.deep.include({
        code: 1,
        stdout: '',
        stderr: 'devcloud: unknown command frobnicate; see devcloud --help\n',
      });
    }
    expect(await cli('--json')).to.deep.include({
      code: 1,
      stderr: 'devcloud: --json needs a command; see devcloud --help\n',
    });
  });

  it('refuses a missing required option, a missing value and a stray argument before running anything', async () => {
    expect((await cli('agent', 'create', '--project', 'prj_x')).stderr).to.equal(
      'devcloud: agent create: --project ID, --site ID and --out DIR are required\n',
    );
    expect((await cli('project', 'create', '--name', '')).stderr).to.equal(
      'devcloud: project create: --name NAME is required\n',
    );
    expect((await cli('client', 'list', '--project')).stderr).to.equal(
      "devcloud: client list: option '--project ID' argument missing; see devcloud client list --help\n",
    );
    expect((await cli('migrate', '--json=yes')).stderr).to.equal(
      'devcloud: migrate: --json takes no value; see devcloud migrate --help\n',
    );
    // An unquoted second scope would otherwise be dropped without a word.
    expect(
      (await cli('client', 'create', '--project', 'prj_x', '--scopes', 'devices:read', 'telemetry:read'))
        .stderr,
    ).to.equal(
      'devcloud: client create: unexpected argument telemetry:read; see devcloud client create --help\n',
    );
    expect(runs.every((run) => run.notCalled)).to.equal(true);
  });

  it('hands a good invocation to its command: its options, typed, and its arguments', async () => {
    const create = leaves().find(([path]) => path === 'client create')![1].run as sinon.SinonStub;
    const run = await cli('client', 'create', '--project', 'prj_x', '--scopes', 'a b', '--json');
    expect(run).to.deep.equal({ code: 0, stdout: '', stderr: '' });
    expect(create.calledOnce).to.equal(true);
    const [invocation] = create.firstCall.args as [
      { args: unknown; values: unknown; out: { json: boolean } },
    ];
    expect(invocation.values).to.deep.equal({ project: 'prj_x', scopes: 'a b', json: true });
    expect(invocation.args).to.deep.equal([]);
    expect(invocation.out.json).to.equal(true);

    const status = leaves().find(([path]) => path === 'device status')![1].run as sinon.SinonStub;
    await cli('device', 'status', 'dev_1', 'retired', '--reason', 'end of life');
    expect(status.firstCall.args[0]).to.deep.include({
      args: ['dev_1', 'retired'],
      values: { reason: 'end of life' },
    });
  });
});
