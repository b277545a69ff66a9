import { z } from 'zod';
import { defineEvent, type DomainEvent } from '../events/definition.js';

/** Every uplink message of a device's readings is one event on this stream. */
export const readingsStreamName = (deviceId: string) => `readings-${deviceId}`;

/**
 * One accepted uplink message: the readings of one device, as the agent sent them (only the readings that
 * passed validation). Capability keys are plain strings so a key retired from the catalogue never breaks a
 * replay. Kept for the readings retention, not for ever.
 */
export const ReadingsRecorded = defineEvent(
  'ReadingsRecorded',
  z.object({
    /** Public id. */
    deviceId: z.string(),
    projectId: z.string(),
    /** The device's site when recorded: daily buckets follow its timezone (UTC when absent). */
    siteId: z.string().optional(),
    agentId: z.string(),
    /** The agent's sequence number of the message, when it sent one. */
    seq: z.number().int().nonnegative().optional(),
    /** Server time the message arrived, ISO 8601 UTC: the serverTime of every reading in it. */
    receivedAt: z.iso.datetime(),
    readings: z
      .array(
        z.object({
          capability: z.string(),
          value: z.union([z.number(), z.boolean(), z.string()]),
          /** The device's own measurement time, normalised to ISO 8601 UTC; absent when not reported. */
          deviceTime: z.iso.datetime().optional(),
        }),
      )
      .min(1),
  }),
  'readings',
);

export const readingsEvents = [ReadingsRecorded] as const;

type ReadingsEvent = DomainEvent<typeof ReadingsRecorded>;
export type ReadingsRecordedData = ReadingsEvent['data'];
export type RecordedReading = ReadingsRecordedData['readings'][number];
