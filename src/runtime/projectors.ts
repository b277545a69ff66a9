import { auditChainProjector } from '../projections/audit-chain/projector.js';
import type { Logger } from '../infra/logger.js';
import type { Pool } from '../infra/postgres/pool.js';
import { agentsProjector } from '../projections/agents/projector.js';
import { auditProjector } from '../projections/audit/projector.js';
import { bindingsProjector } from '../projections/bindings/projector.js';
import { recordedPartitionCount } from '../projections/checkpoints.js';
import { commandsProjector } from '../projections/commands/projector.js';
import { devicesProjector } from '../projections/devices/projector.js';
import { grantsProjector } from '../projections/grants/projector.js';
import { identityProjector } from '../projections/identity/projector.js';
import { pairingProjector } from '../projections/pairing/projector.js';
import { partitionsOf, type PartitionableProjector } from '../projections/partitions.js';
import type { Projector } from '../projections/projector.js';
import { sitesProjector } from '../projections/sites/projector.js';
import { stateFamily } from '../projections/state/projector.js';
import { telemetryFamily } from '../projections/telemetry/projector.js';

/** The projectors heavy enough to be split into partitions (docs/deployment.md). */
export const PARTITIONABLE: readonly PartitionableProjector[] = [stateFamily, telemetryFamily];

/**
 * The event types the partitionable projectors follow. Their subscriptions (every partition of each) read
 * one chain of pages of these types rather than each its own (src/eventstore/shared-pages.ts).
 */
export const SHARED_READ_TYPES: readonly string[] = [
  ...new Set(PARTITIONABLE.flatMap((family) => family.create(family.family).eventTypes)),
];

/** Partition count per partitionable family; a family not named runs whole. */
export type Partitioning = Readonly<Record<string, number>>;

/** Every read model the service keeps, in the order they are installed; heavy ones in their partitions. */
export function allProjectors(partitioning: Partitioning = {}): Projector[] {
  return [
    auditChainProjector(),
    auditProjector(),
    identityProjector(),
    sitesProjector(),
    devicesProjector(),
    bindingsProjector(),
    agentsProjector(),
    pairingProjector(),
    grantsProjector(),
    commandsProjector(),
    ...PARTITIONABLE.flatMap((family) => partitionsOf(family, partitioning[family.family] ?? 1)),
  ];
}

/**
 * The partitioning this database runs: the count its checkpoints were recorded with, or `configured` for a
 * family it has never run. A configured count that differs from the recorded one is reported, not
 * applied: changing it takes `devcloud projections partition`, which hands over without a gap.
 */
export async function partitioningOf(pool: Pool, configured: number, logger?: Logger): Promise<Partitioning> {
  const partitioning: Record<string, number> = {};
  for (const { family } of PARTITIONABLE) {
    const recorded = await recordedPartitionCount(pool, family);
    if (recorded !== undefined && recorded !== configured)
      logger?.warn(
        { projector: family, recorded, configured },
        'PROJECTOR_PARTITIONS differs from the partitioning this database runs: the recorded count stands',
      );
    partitioning[family] = recorded ?? configured;
  }
  return partitioning;
}
