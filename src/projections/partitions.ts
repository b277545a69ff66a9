import type { RecordedEvent } from '../eventstore/port.js';
import type { Partition, Projector } from './projector.js';

/**
 * A projector heavy enough to be split: each partition follows every event of its types but applies only
 * those whose key hashes to it, so per-key order holds and partitions write disjoint rows. An event
 * without a key (a site's timezone) is one every partition needs, and each applies it.
 */
export interface PartitionableProjector {
  readonly family: string;
  /** A fresh projector writing under `name` (a partition's own caches and bookkeeping rows). */
  create(name: string): Projector;
  /** The key that decides the partition (a device id); undefined for an event every partition applies. */
  keyOf(event: RecordedEvent): string | undefined;
}

/** The key of an event about one device: its device id. */
export function deviceKeyOf(event: RecordedEvent): string | undefined {
  const deviceId = (event.data as { deviceId?: unknown }).deviceId;
  return typeof deviceId === 'string' ? deviceId : undefined;
}

/** The largest partition count accepted: beyond it, partitions outnumber any sensible set of processes. */
export const MAX_PARTITIONS = 64;

/** One partition keeps the family's own name, so an unpartitioned deployment's checkpoints stay as they are. */
function partitionName(family: string, index: number, count: number): string {
  return count === 1 ? family : `${family}:${index}/${count}`;
}

const PARTITION_NAME = /^(.+):(\d+)\/(\d+)$/;

/** Where a checkpoint name sits: the family and partition it names, or a whole (unpartitioned) family. */
export function partitionOfName(name: string): Partition {
  const match = PARTITION_NAME.exec(name);
  if (!match) return { family: name, index: 0, count: 1 };
  return { family: match[1]!, index: Number(match[2]), count: Number(match[3]) };
}

/** FNV-1a over the key's UTF-16 units: the same partition in every process and every release. */
export function partitionIndex(key: string, count: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % count;
}

/** The `count` partitions of a partitionable projector; one partition is the projector itself. */
export function partitionsOf(partitionable: PartitionableProjector, count: number): Projector[] {
  if (!Number.isInteger(count) || count < 1 || count > MAX_PARTITIONS)
    throw new RangeError(`partition count must be an integer from 1 to ${MAX_PARTITIONS}`);
  const { family, keyOf } = partitionable;
  if (count === 1) return [partitionable.create(family)];
  return Array.from({ length: count }, (_, index) => {
    const name = partitionName(family, index, count);
    const whole = partitionable.create(name);
    const mine = (event: RecordedEvent) => {
      const key = keyOf(event);
      return key === undefined || partitionIndex(key, count) === index;
    };
    return {
      ...whole,
      name,
      partition: { family, index, count },
      prepare: whole.prepare && ((events) => whole.prepare!(events.filter(mine))),
      async apply(events, db, prepared) {
        const own = events.filter(mine);
        if (own.length > 0) await whole.apply(own, db, prepared);
      },
    } satisfies Projector;
  });
}
