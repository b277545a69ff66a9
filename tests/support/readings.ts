import { randomUUID } from 'node:crypto';
import {
  ReadingsRecorded,
  readingsStreamName,
  type RecordedReading,
} from '../../src/domain/readings/index.js';
import type { EventStore } from '../../src/eventstore/port.js';

export interface RecordReadings {
  readonly deviceId: string;
  readonly projectId?: string;
  readonly siteId?: string;
  readonly receivedAt: string;
  readonly readings: readonly RecordedReading[];
}

/** Appends one ReadingsRecorded event per message, as the ingestor would (one append for all). */
export async function recordReadings(
  store: EventStore,
  ...messages: readonly RecordReadings[]
): Promise<void> {
  await store.appendBatch(
    messages.map((m) => ({
      streamName: readingsStreamName(m.deviceId),
      event: {
        id: randomUUID(),
        type: ReadingsRecorded.type,
        data: {
          deviceId: m.deviceId,
          projectId: m.projectId ?? 'prj_test',
          ...(m.siteId !== undefined && { siteId: m.siteId }),
          agentId: 'agt_test',
          receivedAt: m.receivedAt,
          readings: m.readings,
        },
      },
    })),
  );
}
