import { expect } from 'chai';
import type { CommandLedger, SentCommand } from '../../tools/soak/command-driver.js';
import { actedAtMostOnce, judgeCommands, type RecordedCommand } from '../../tools/soak/commands-check.js';

const sent = (key: string, commandId: string | undefined, status: number | undefined = 201): SentCommand => ({
  key,
  attempts: 1,
  status,
  commandId,
});
const recorded = (commandId: string, key: string | undefined, more: Partial<RecordedCommand> = {}) =>
  ({
    commandId,
    idempotencyKey: key,
    accepted: 1,
    sends: 1,
    status: 'succeeded',
    ...more,
  }) as RecordedCommand;
const ledger = (
  commands: SentCommand[],
  applied: Record<string, number>,
  delivered: Record<string, number> = applied,
): CommandLedger => ({
  deviceId: 'dev_plug',
  sent: commands,
  deliveries: new Map(Object.entries(delivered)),
  applications: new Map(Object.entries(applied)),
});

/** The soak's command check: one command per idempotency key, each acted on at most once. */
describe('soak command check: keys and applications', () => {
  const keys = [sent('k1', 'cmd1'), sent('k2', 'cmd2'), sent('k3', 'cmd3'), sent('k4', undefined, 403)];
  const stream = [
    recorded('cmd1', 'k1'),
    recorded('cmd2', 'k2'),
    // Its agent was away past the TTL: never sent, never applied. Legitimate, and counted.
    recorded('cmd3', 'k3', { sends: 0, status: 'expired' }),
  ];

  it('passes one command per key, each applied at most once, and counts statuses', () => {
    const report = judgeCommands(ledger(keys, { cmd1: 1, cmd2: 1 }), stream);
    expect(report).to.include({ keys: 4, accepted: 3, refused: 1, recorded: 3, applied: 2, delivered: 2 });
    expect(report.byStatus).to.deep.equal({ succeeded: 2, expired: 1 });
    expect(actedAtMostOnce(report), JSON.stringify(report)).to.equal(true);
  });

  it('fails a key that recorded two commands, or a refused key that recorded one', () => {
    const twice = judgeCommands(ledger(keys, { cmd1: 1, cmd2: 1 }), [...stream, recorded('cmd1b', 'k1')]);
    expect(twice).to.include({ keysWithSeveralCommands: 1 });
    expect(twice.examples.keysWithSeveralCommands).to.deep.equal(['k1']);
    expect(actedAtMostOnce(twice)).to.equal(false);
    const refused = judgeCommands(ledger(keys, { cmd1: 1, cmd2: 1 }), [...stream, recorded('cmd4', 'k4')]);
    expect(refused).to.include({ keysWithSeveralCommands: 1 });
    expect(actedAtMostOnce(refused)).to.equal(false);
  });

  it('fails a command the agent applied twice, or received twice', () => {
    const applied = judgeCommands(ledger(keys, { cmd1: 2, cmd2: 1 }, { cmd1: 1, cmd2: 1 }), stream);
    expect(applied).to.include({ appliedTwice: 1, deliveredTwice: 0 });
    expect(applied.examples.appliedTwice).to.deep.equal(['cmd1 x2']);
    expect(actedAtMostOnce(applied)).to.equal(false);
    const delivered = judgeCommands(ledger(keys, { cmd1: 1, cmd2: 1 }, { cmd1: 1, cmd2: 2 }), stream);
    expect(delivered).to.include({ deliveredTwice: 1, appliedTwice: 0 });
    expect(actedAtMostOnce(delivered)).to.equal(false);
  });

  it('fails a command accepted or sent twice on the stream', () => {
    const report = judgeCommands(ledger(keys, { cmd1: 1, cmd2: 1 }), [
      recorded('cmd1', 'k1', { sends: 2 }),
      ...stream.slice(1),
    ]);
    expect(report).to.include({ recordedTwice: 1 });
    expect(actedAtMostOnce(report)).to.equal(false);
  });

  it('fails an answer whose command is not recorded, a stray command, and an application nobody asked for', () => {
    const missing = judgeCommands(ledger(keys, { cmd1: 1 }), [stream[0]!, stream[2]!]);
    expect(missing).to.include({ keysWithoutCommand: 1 });
    const stray = judgeCommands(ledger(keys, { cmd1: 1, cmd2: 1 }), [...stream, recorded('cmd9', undefined)]);
    expect(stray).to.include({ strayCommands: 1 });
    const unknown = judgeCommands(ledger(keys, { cmd1: 1, cmd2: 1, cmd9: 1 }), stream);
    expect(unknown).to.include({ appliedUnknown: 1 });
    const unapplied = judgeCommands(ledger(keys, { cmd1: 1 }), stream);
    expect(unapplied).to.include({ succeededUnapplied: 1 });
    for (const report of [missing, stray, unknown, unapplied])
      expect(actedAtMostOnce(report)).to.equal(false);
  });
});
