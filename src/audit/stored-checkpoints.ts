import {
  AuditCheckpointSigned,
  checkpointStream,
  type AuditCheckpoint,
} from '../domain/audit/checkpoint-events.js';
import type { ObservedCheckpoint } from '../domain/audit/verification.js';
import type { EventStore, RecordedEvent } from '../eventstore/port.js';
import { readHistory } from './history.js';

const observed = (event: RecordedEvent): ObservedCheckpoint => ({
  eventPosition: event.position,
  checkpoint: event.data as AuditCheckpoint,
});

/**
 * Every checkpoint event the store holds (of one project, or all), wherever it was written: read by type
 * over the global order, so a checkpoint is judged on what it says, not on which stream it sits in.
 */
export async function storedCheckpoints(
  store: EventStore,
  projectId?: string,
): Promise<ObservedCheckpoint[]> {
  const found: ObservedCheckpoint[] = [];
  for await (const event of readHistory(store, [AuditCheckpointSigned.type])) {
    const checkpoint = observed(event);
    if (projectId === undefined || checkpoint.checkpoint.projectId === projectId) found.push(checkpoint);
  }
  return found;
}

/** One project's checkpoints, from its audit stream, in sequence order. */
export async function projectCheckpoints(
  store: EventStore,
  projectId: string,
): Promise<ObservedCheckpoint[]> {
  return (await store.readStream(checkpointStream(projectId))).map(observed);
}

/** The newest checkpoint of each project (of one project, or all), by project. */
export function newestByProject(checkpoints: readonly ObservedCheckpoint[]): Map<string, ObservedCheckpoint> {
  const newest = new Map<string, ObservedCheckpoint>();
  for (const c of checkpoints) {
    const before = newest.get(c.checkpoint.projectId);
    if (!before || before.checkpoint.sequence < c.checkpoint.sequence) newest.set(c.checkpoint.projectId, c);
  }
  return newest;
}
