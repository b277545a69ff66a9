import {
  ReadingsRecorded,
  readingsStreamName,
  screenReadings,
  type ReadingsRecordedData,
  type RefusedReading,
} from '../../domain/readings/index.js';
import { epochTime } from '../../infra/iso-time.js';
import type { BatchEntry, BatchEntryResult, EventStore } from '../../eventstore/port.js';
import { LogThrottle } from '../../infra/log-throttle.js';
import type { Logger } from '../../infra/logger.js';
import type { Metrics } from '../../infra/metrics.js';
import { RejectedMessage } from '../rejected-message.js';
import { AppendBatcher } from './append-batcher.js';
import { DeviceDirectory } from './device-directory.js';
import { readingsEventId } from './event-id.js';
import { ReadingQuota } from './reading-quota.js';

export interface ReadingsIngestorOptions {
  readonly store: EventStore;
  readonly logger: Logger;
  readonly metrics: Pick<
    Metrics,
    | 'readingsStored'
    | 'readingsRefused'
    | 'readingsRedelivered'
    | 'readingsAppendMessages'
    | 'readingsOverQuota'
  >;
  /** Server clock (ms since the epoch): the receivedAt of each message. */
  readonly now?: () => number;
  /** READINGS_BATCH_WINDOW_MS: how long a message may wait for others to share its append. */
  readonly batchWindowMs?: number;
  /** READINGS_BATCH_MAX_MESSAGES: messages per append at most. */
  readonly maxBatchMessages?: number;
  /** Appends running at once; further messages gather into the next batch meanwhile. */
  readonly maxAppendsInFlight?: number;
  readonly deviceCacheMs?: number;
  /** Per-agent readings quota (READINGS_QUOTA_*); none when absent. */
  readonly quota?: { readonly readingsPerSecond: number; readonly burst: number };
}

/** One readings message as the uplink parsed it against the wire contract (docs/mqtt.md). */
interface ReadingsMessage {
  readonly seq?: number;
  readonly readings: readonly {
    readonly capability: string;
    readonly value: number | boolean | string;
    readonly deviceTime?: string;
  }[];
}

export interface ReadingsIngestor {
  /**
   * Stores one readings message of `deviceId` published by `agent`, parsed once on its way in; `payload` is
   * its bytes as published, which name a message without a seq. Resolves only once its event is durable (a
   * redelivery of a stored message resolves too, writing nothing). Throws RejectedMessage for a message that
   * can never be stored; any other error means "not stored, deliver it again". An agent over its readings
   * quota waits here first; `connection` ending stops the wait (an AbortError).
   */
  ingest(
    agent: { readonly agentId: string; readonly projectId: string },
    deviceId: string,
    message: ReadingsMessage,
    payload: Buffer,
    connection?: AbortSignal,
  ): Promise<void>;
  /** Writes what is waiting and resolves when every append has settled. */
  close(): Promise<void>;
}

const REFUSAL_LOG_WINDOW_MS = 60_000;

export function createReadingsIngestor(options: ReadingsIngestorOptions): ReadingsIngestor {
  const now = options.now ?? Date.now;
  const { store, metrics } = options;
  const logger = options.logger.child({ component: 'readings-ingest' });
  const devices = new DeviceDirectory({ store, now, ttlMs: options.deviceCacheMs });
  const batcher = new AppendBatcher<BatchEntry, BatchEntryResult>({
    windowMs: options.batchWindowMs ?? 5,
    maxItems: options.maxBatchMessages ?? 500,
    maxInFlight: options.maxAppendsInFlight,
    async write(entries) {
      metrics.readingsAppendMessages.observe(entries.length);
      try {
        return await appendAll(store, entries);
      } catch (error) {
        // Whatever failed, the callers must not mistake it for a refusal: they are to be redelivered.
        throw error instanceof RejectedMessage ? new Error(error.message, { cause: error }) : error;
      }
    },
  });
  const refusalLogs = new LogThrottle({ windowMs: REFUSAL_LOG_WINDOW_MS, now });
  const quota =
    options.quota &&
    new ReadingQuota({ ...options.quota, logger, onOverQuota: () => metrics.readingsOverQuota.inc() });

  // A message refused as a whole is logged by the broker; this covers readings dropped from kept messages.
  function logDropped(agentId: string, deviceId: string, refused: readonly RefusedReading[]) {
    const suppressed = refusalLogs.due(agentId);
    if (suppressed === undefined) return;
    logger.warn(
      { agentId, deviceId, refused, suppressedSinceLastLog: suppressed },
      'readings refused (logged once a minute per agent)',
    );
  }

  return {
    async ingest(agent, deviceId, message, payload, connection) {
      // When the broker got it, even if the quota then holds it back.
      const receivedAt = new Date(now()).toISOString();
      await quota?.admit(agent.agentId, message.readings.length, connection);
      const device = await devices.find(agent.projectId, deviceId);
      if (!device) {
        throw new RejectedMessage(
          'unknown_device',
          `readings for ${deviceId}: no such device in the project`,
        );
      }
      const { accepted, refused } = screenReadings(message.readings, device.capabilities);
      for (const r of refused) metrics.readingsRefused.inc({ reason: r.reason });
      if (accepted.length === 0) {
        const reasons = [...new Set(refused.map((r) => r.reason))].join(', ');
        throw new RejectedMessage(
          'invalid_readings',
          `readings for ${deviceId}: every reading refused (${reasons})`,
        );
      }
      if (refused.length > 0) logDropped(agent.agentId, deviceId, refused);
      const data: ReadingsRecordedData = {
        deviceId,
        projectId: device.projectId,
        siteId: device.siteId,
        agentId: agent.agentId,
        ...(message.seq !== undefined && { seq: message.seq }),
        receivedAt,
        readings: accepted.map((r) => ({
          capability: r.capability,
          value: r.value,
          ...(r.deviceTime !== undefined && {
            deviceTime: new Date(epochTime(r.deviceTime).ms).toISOString(),
          }),
        })),
      };
      const id = readingsEventId({ agentId: agent.agentId, deviceId, seq: message.seq, payload });
      const result = await batcher.submit({
        streamName: readingsStreamName(deviceId),
        event: { id, type: ReadingsRecorded.type, data },
      });
      if (result.inserted) metrics.readingsStored.inc(accepted.length);
      else metrics.readingsRedelivered.inc();
    },
    close: () => batcher.drain(),
  };
}

/**
 * One append for the whole batch. appendBatch answers once per distinct id, so two copies of one message
 * in the same batch (a redelivery racing its original) share the answer; the second copy is reported as
 * not inserted, like any redelivery.
 */
async function appendAll(store: EventStore, entries: readonly BatchEntry[]): Promise<BatchEntryResult[]> {
  const results = await store.appendBatch(entries);
  const byId = new Map(results.map((r) => [r.id, r]));
  const seen = new Set<string>();
  return entries.map(({ event }) => {
    const result = byId.get(event.id);
    if (!result) throw new Error(`event store answered no result for event ${event.id}`);
    const first = !seen.has(event.id);
    seen.add(event.id);
    return first ? result : { ...result, inserted: false };
  });
}
