import cliProgress from 'cli-progress';
import { readCheckpoint } from '../../projections/checkpoints.js';
import { RebuildRefused } from '../../projections/projector.js';
import { rebuildProjector, type RebuildProgress } from '../../projections/rebuild.js';
import { partitionsOf, MAX_PARTITIONS } from '../../projections/partitions.js';
import { PartitionsInUse, repartition } from '../../projections/partitioning.js';
import { allProjectors, PARTITIONABLE, partitioningOf } from '../../runtime/projectors.js';
import { withCliContext } from '../context.js';
import { CliError, type Output } from '../output.js';

export async function projectionsStatus(out: Output): Promise<void> {
  await withCliContext(async ({ config, database, store }) => {
    const head = await store.headPosition();
    const projectors = [];
    const partitioning = await partitioningOf(database.pool, config.PROJECTOR_PARTITIONS);
    for (const projector of allProjectors(partitioning)) {
      const checkpoint = await readCheckpoint(database.pool, projector.name);
      projectors.push({
        name: projector.name,
        version: projector.version,
        installedVersion: checkpoint?.version ?? null,
        position: checkpoint?.position ?? null,
        eventsApplied: Number(checkpoint?.eventsApplied ?? 0n),
        updatedAt: checkpoint?.updatedAt.toISOString() ?? null,
        caughtUp:
          head === undefined ||
          (checkpoint?.position !== undefined && store.comparePositions(checkpoint.position, head) >= 0),
      });
    }
    out.result(
      { head: head ?? null, projectors },
      projectors
        .map(
          (p) =>
            `${p.name.padEnd(16)} v${p.version} ${p.caughtUp ? 'caught up' : 'behind'}  events ${p.eventsApplied}`,
        )
        .join('\n'),
    );
  });
}

export async function projectionsPartition(out: Output, name: string, countText: string): Promise<void> {
  const family = PARTITIONABLE.find((p) => p.family === name);
  if (!family)
    throw new CliError(
      `${name} cannot be partitioned; these can: ${PARTITIONABLE.map((p) => p.family).join(', ')}`,
    );
  const count = Number(countText);
  if (!/^\d+$/.test(countText) || count < 1 || count > MAX_PARTITIONS)
    throw new CliError(`COUNT must be a whole number from 1 to ${MAX_PARTITIONS}`);
  await withCliContext(async ({ config, database, store }) => {
    try {
      const done = await repartition(database.pool, database.locks, store, family, count, {
        batchSize: config.PROJECTION_BATCH_SIZE,
      });
      out.result(
        { projector: name, from: done.from ?? null, to: done.to, position: done.position ?? null },
        done.from === count
          ? `${name} already runs in ${count} partition(s)`
          : `${name}: ${done.from ?? 'none'} -> ${count} partition(s) (${partitionsOf(family, count)
              .map((p) => p.name)
              .join(', ')}), from position ${done.position ?? 'the start'}`,
      );
    } catch (error) {
      if (error instanceof PartitionsInUse) throw new CliError(error.message);
      throw error;
    }
  });
}

export async function projectionsRebuild(out: Output, name: string | undefined): Promise<void> {
  const all = allProjectors();
  // Without a name: every read model that can be rebuilt from the events the store still holds.
  const chosen = name ? all.filter((p) => p.name === name) : all.filter((p) => !p.rebuildRefused);
  if (chosen.length === 0)
    throw new CliError(`no projector named ${name}; known: ${all.map((p) => p.name).join(', ')}`);
  const refused = chosen.find((p) => p.rebuildRefused);
  if (refused) throw new CliError(new RebuildRefused(refused.name, refused.rebuildRefused!).message);
  await withCliContext(async ({ config, database, store }) => {
    for (const projector of chosen) {
      const bar = !out.json && process.stderr.isTTY ? progressBar(projector.name) : undefined;
      let lastReport = 0;
      const onProgress = (p: RebuildProgress) => {
        const rate = p.elapsedMs > 0 ? Math.round((p.eventsApplied * 1000) / p.elapsedMs) : 0;
        const eta =
          p.eventsTotal && rate > 0
            ? Math.max(0, Math.round((p.eventsTotal - p.eventsApplied) / rate))
            : null;
        bar?.setTotal(Math.max(p.eventsTotal ?? 0, p.eventsApplied));
        bar?.update(p.eventsApplied, { rate, etaText: eta === null ? '?' : `${eta}s` });
        if (out.json && (p.done || Date.now() - lastReport >= 500)) {
          lastReport = Date.now();
          out.progress({
            projector: p.projector,
            eventsApplied: p.eventsApplied,
            eventsTotal: p.eventsTotal ?? null,
            eventsPerSecond: rate,
            etaSeconds: eta,
            done: p.done,
          });
        }
      };
      bar?.start(0, 0, { rate: 0, etaText: '?' });
      const result = await rebuildProjector(database.readModels, store, projector, {
        batchSize: config.PROJECTION_BATCH_SIZE,
        onProgress,
      });
      bar?.stop();
      if (!out.json) {
        const rate = Math.round((result.eventsApplied * 1000) / Math.max(1, result.elapsedMs));
        out.result(
          {},
          `${projector.name}: rebuilt from ${result.eventsApplied} events in ${(result.elapsedMs / 1000).toFixed(1)}s (${rate} events/s)`,
        );
      }
    }
  });
}

function progressBar(name: string) {
  return new cliProgress.SingleBar(
    {
      format: `${name} [{bar}] {percentage}% | {value}/{total} events | {rate} events/s | ETA {etaText}`,
      stream: process.stderr,
      hideCursor: true,
    },
    cliProgress.Presets.shades_classic,
  );
}
