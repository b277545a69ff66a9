import { expect } from 'chai';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { devcloud } from '../support/devcloud.js';

// The real binary: each start costs a second or more, so this file runs few of them (commands.test.ts
// covers every command in-process).
describe('devcloud: per-command flags and help (the binary)', function () {
  this.timeout(120_000);
  let db: TestDatabase;

  before(async () => {
    db = await freshDatabase();
  });
  after(() => db.drop());

  it('refuses a flag the command does not take: exit 1, one line naming the flag, the command and its help', async () => {
    const run = await devcloud({ db }, 'migrate', '--kills', '3');
    expect(run.code).to.equal(1);
    expect(run.stdout).to.equal('');
    expect(run.stderr).to.equal('devcloud: migrate does not take --kills; see devcloud migrate --help\n');
  });

  it('prints the help of one command, the same through `help`, listing only its options', async () => {
    const flag = await devcloud({ db }, 'migrate', '--help');
    const word = await devcloud({ db }, 'help', 'migrate');
    expect(flag.code, flag.stderr).to.equal(0);
    expect(word.stdout).to.equal(flag.stdout);
    expect(flag.stdout).to.match(/^Usage: devcloud migrate \[options\]\n/);
    const options = flag.stdout.slice(flag.stdout.indexOf('\nOptions:\n'));
    expect(options.match(/^\s+(-\w, )?--[\w-]+/gm)?.map((line) => line.trim())).to.deep.equal([
      '--json',
      '-h, --help',
    ]);
  });

  it('still runs a known-good invocation', async () => {
    const run = await devcloud({ db }, 'migrate', '--json');
    expect(run.code, run.stderr).to.equal(0);
    const answer = JSON.parse(run.stdout) as { migrations: string[] };
    expect(answer.migrations).to.be.an('array').that.is.not.empty;
  });
});
