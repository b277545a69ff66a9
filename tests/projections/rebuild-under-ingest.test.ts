import { expect } from 'chai';
import { createLogger } from '../../src/infra/logger.js';
import { readCheckpoint } from '../../src/projections/checkpoints.js';
import { devicesProjector } from '../../src/projections/devices/projector.js';
import { runProjector } from '../../src/projections/runner.js';
import { compareWithReplay } from '../../tools/soak/replay-check.js';
import { projectorsCaughtUp, waitFor } from '../../tools/soak/settle.js';
import { devcloudLines } from '../support/devcloud.js';
import { storeAndDirectoryForSuite } from '../support/event-store.js';
import { startEventWriter, type EventWriter } from '../support/event-writer.js';

/**
 * `devcloud projections rebuild devices` runs while devices keep being adopted (and readings keep arriving)
 * and the live devices projector keeps running. Afterwards the table holds every device adopted before,
 * during and after the rebuild, and its content (every column, the list order `seq` included) equals a clean
 * replay of the same events.
 */
describe('projection rebuild while events keep arriving', function () {
  this.timeout(600_000);
  let writer: EventWriter | undefined;
  const live = new AbortController();
  const suite = storeAndDirectoryForSuite(
    'rebuild',
    async () => {
      live.abort();
      await writer?.stop();
    },
    { idlePollMs: 50 },
  );

  it('swaps in a table equal to a clean replay, losing nothing written during the rebuild', async () => {
    const { db, store, dataDir } = suite;
    const projector = devicesProjector();
    const runner = runProjector(db.pool, store, projector, {
      batchSize: 50,
      locks: db.locks,
      signal: live.signal,
      logger: createLogger('silent'),
      standbyRetryMs: 100,
    });
    writer = await startEventWriter(store, { dataDir, readingsPerRound: 20, adoptEvery: 1, pauseMs: 5 });
    expect(await waitFor(() => writer!.devices.length >= 40, 120_000), 'devices adopted beforehand').to.equal(
      true,
    );

    const started = Date.now();
    // Small batches: the replay takes many round trips while adoptions keep committing.
    const rebuild = await devcloudLines(['projections', 'rebuild', 'devices', '--json'], db.url, 5);
    const finished = Date.now();
    expect(rebuild.code, rebuild.stderr).to.equal(0);
    const final = JSON.parse(rebuild.lines.at(-1)!) as { eventsApplied: number; done: boolean };
    expect(final.done).to.equal(true);

    // Adoptions go on after the swap, onto the swapped-in table.
    const atSwap = writer.devices.length;
    expect(await waitFor(() => writer!.devices.length >= atSwap + 3, 60_000)).to.equal(true);
    await writer.stop();
    expect(
      await projectorsCaughtUp(db.pool, store, [projector], 120_000),
      'live projector caught up',
    ).to.equal(true);
    live.abort();
    await runner;

    // The race really overlapped: devices were adopted while the rebuild ran, and the live projector applied
    // events on top of the rebuilt table after the swap.
    const during = writer.devices.filter((d) => d.appendedAtMs > started && d.appendedAtMs < finished);
    expect(during.length, 'devices adopted during the rebuild').to.be.greaterThan(0);
    const checkpoint = await readCheckpoint(db.pool, projector.name);
    expect(Number(checkpoint!.eventsApplied), 'events applied after the swap').to.be.greaterThan(
      final.eventsApplied,
    );

    const { rows } = await db.pool.query<{ device_id: string }>('SELECT device_id FROM devices');
    expect(rows.map((r) => r.device_id).sort()).to.deep.equal(writer.devices.map((d) => d.deviceId).sort());
    const [comparison] = await compareWithReplay(db.pool, store, [projector]);
    expect(comparison!.equal, JSON.stringify(comparison)).to.equal(true);
    expect(comparison!.liveRows).to.equal(writer.devices.length);
  });
});
