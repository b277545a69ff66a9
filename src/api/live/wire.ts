import { z } from 'zod';

/**
 * The `data` of each live frame, as documented (docs/api.md, "Live stream") and described in the OpenAPI
 * document. frames.ts builds them; tests parse real frames with these to keep the two in step.
 */
const time = z.iso.datetime();

const telemetryFrameSchema = z.object({
  deviceId: z.string(),
  capability: z.string(),
  value: z.union([z.number(), z.boolean(), z.string()]),
  unit: z.string().nullable(),
  quality: z.array(z.string()),
  deviceTime: time.nullable(),
  serverTime: time,
});

const deviceStatusFrameSchema = z.object({
  deviceId: z.string(),
  change: z.enum(['lifecycle', 'connectivity', 'profile']),
  status: z.string().meta({ description: 'The new value of what changed.' }),
  reason: z.string().nullable(),
  at: z.string(),
});

const commandUpdateFrameSchema = z.object({
  commandId: z.string(),
  deviceId: z.string(),
  capability: z.string(),
  status: z.enum(['queued', 'sent', 'succeeded', 'failed', 'expired', 'superseded', 'cancelled']),
  time: z.string(),
  reason: z.string().optional().meta({ description: 'When failed or cancelled.' }),
  attempt: z.number().int().optional().meta({ description: 'When sent.' }),
  supersededBy: z.string().optional().meta({ description: 'When superseded.' }),
});

const pairingUpdateFrameSchema = z.object({
  sessionId: z.string(),
  hubId: z.string(),
  ieeeAddr: z.string().nullable(),
  state: z.string(),
  deviceId: z.string().nullable(),
});

const replayGapFrameSchema = z.object({
  reason: z.enum(['retention', 'unknown_id']),
  types: z.array(z.string()),
  from: time.nullable(),
  to: time,
  deviceIds: z.array(z.string()).nullable(),
});

const streamErrorFrameSchema = z.object({
  reason: z.enum(['shutdown', 'too_slow', 'token_expired', 'token_revoked', 'unavailable']),
});

export const LIVE_FRAME_SCHEMAS = {
  telemetry: telemetryFrameSchema,
  device_status: deviceStatusFrameSchema,
  command_update: commandUpdateFrameSchema,
  pairing_update: pairingUpdateFrameSchema,
  replay_gap: replayGapFrameSchema,
  stream_error: streamErrorFrameSchema,
} as const;
