import { z } from 'zod';
import { defineEvent, type DomainEvent } from '../events/definition.js';

/**
 * A signed checkpoint of a project's audit chain: the scheduler's leader signs the chain's head with the
 * audit signing key (kept apart from the keys that sign access tokens) and records it on the project's
 * stream `audit-<projectId>`, one checkpoint a revision. `sequence` is that revision; `previous` the digest
 * of the checkpoint before (null for the first), so a removed checkpoint shows. Checkpoints are not
 * chained themselves: they are the signatures over the chain.
 */
export const AuditCheckpointSigned = defineEvent(
  'AuditCheckpointSigned',
  z.object({
    projectId: z.string(),
    sequence: z.number().int().nonnegative(),
    /** How many chained events of the project the head covers. */
    count: z.number().int().positive(),
    /** Position of the last event it covers. */
    position: z.string(),
    head: z.string().regex(/^[0-9a-f]{64}$/),
    previous: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .nullable(),
    signedAt: z.string(),
    keyId: z.string(),
    algorithm: z.literal('Ed25519'),
    /** base64url Ed25519 signature over checkpointPayload(). */
    signature: z.string(),
  }),
);

export const auditEvents = [AuditCheckpointSigned] as const;

export type AuditCheckpoint = DomainEvent<typeof AuditCheckpointSigned>['data'];

export const CHECKPOINT_FORMAT = 'devcloud-audit-checkpoint/1';

export function checkpointStream(projectId: string): string {
  return `audit-${projectId}`;
}

/** The exact text a checkpoint's signature covers: a JSON array of its terms in a fixed order. */
export function checkpointPayload(checkpoint: Omit<AuditCheckpoint, 'signature' | 'algorithm'>): string {
  return JSON.stringify([
    CHECKPOINT_FORMAT,
    checkpoint.projectId,
    checkpoint.sequence,
    checkpoint.count,
    checkpoint.position,
    checkpoint.head,
    checkpoint.previous,
    checkpoint.signedAt,
    checkpoint.keyId,
  ]);
}
