import { randomUUID } from 'node:crypto';
import { checkpointDigest } from '../domain/audit/chain.js';
import {
  checkpointPayload,
  checkpointStream,
  type AuditCheckpoint,
} from '../domain/audit/checkpoint-events.js';
import { WrongExpectedRevisionError, type EventStore, type RecordedEvent } from '../eventstore/port.js';
import type { Pool } from '../infra/postgres/pool.js';
import { sha256Hex } from '../infra/sha256.js';
import type { AuditSigner } from './signing-keys.js';

/** Chain heads that moved past their project's newest checkpoint (or have none). */
const UNSIGNED_HEADS = `
  SELECT h.project_id, h.sequence, h.link, h.position, m.sequence AS mark
    FROM audit_chain_heads h LEFT JOIN audit.checkpoint_marks m USING (project_id)
   WHERE m.count IS NULL OR h.sequence > m.count
   ORDER BY h.project_id`;

const SAVE_MARK = `
  INSERT INTO audit.checkpoint_marks (project_id, sequence, count) VALUES ($1, $2, $3)
  ON CONFLICT (project_id) DO UPDATE SET sequence = excluded.sequence, count = excluded.count
   WHERE audit.checkpoint_marks.sequence < excluded.sequence`;

export interface SignedCheckpoint {
  readonly projectId: string;
  readonly sequence: number;
  readonly count: number;
  readonly position: string;
}

/**
 * Signs every chain head that moved since its project's newest checkpoint and records the checkpoint on
 * the project's audit stream, at the revision after that checkpoint: two schedulers that both believe
 * they lead record one checkpoint each sequence, never two.
 */
export async function signCheckpoints(deps: {
  readonly store: EventStore;
  readonly pool: Pool;
  readonly signer: AuditSigner;
  readonly now: Date;
}): Promise<SignedCheckpoint[]> {
  const rows = await unsignedHeads(deps.pool);
  const signed: SignedCheckpoint[] = [];
  for (const row of rows) {
    const stream = checkpointStream(row.project_id);
    const newest = await newestCheckpoint(deps.store, stream, row.mark === null ? 0n : BigInt(row.mark));
    const count = Number(row.sequence);
    if (newest && (newest.data as AuditCheckpoint).count >= count) {
      await deps.pool.query(SAVE_MARK, [
        row.project_id,
        Number(newest.revision),
        (newest.data as AuditCheckpoint).count,
      ]);
      continue;
    }
    const terms = {
      projectId: row.project_id,
      sequence: newest ? Number(newest.revision) + 1 : 0,
      count,
      position: row.position,
      head: row.link,
      previous: newest
        ? checkpointDigest(
            sha256Hex,
            checkpointPayload(newest.data as AuditCheckpoint),
            (newest.data as AuditCheckpoint).signature,
          )
        : null,
      signedAt: deps.now.toISOString(),
      keyId: deps.signer.keyId,
    };
    const checkpoint: AuditCheckpoint = {
      ...terms,
      algorithm: 'Ed25519',
      signature: deps.signer.sign(checkpointPayload(terms)),
    };
    try {
      await deps.store.append(
        stream,
        [{ id: randomUUID(), type: 'AuditCheckpointSigned', data: checkpoint }],
        newest ? newest.revision : 'no_stream',
      );
    } catch (error) {
      // Another scheduler signed this head first: its checkpoint stands, this one is dropped.
      if (error instanceof WrongExpectedRevisionError) continue;
      throw error;
    }
    await deps.pool.query(SAVE_MARK, [row.project_id, terms.sequence, count]);
    signed.push({ projectId: row.project_id, sequence: terms.sequence, count, position: row.position });
  }
  return signed;
}

interface UnsignedHead {
  readonly project_id: string;
  readonly sequence: string;
  readonly link: string;
  readonly position: string;
  readonly mark: string | null;
}

/** None while the chain's projector has not installed its tables yet (a scheduler started before it). */
async function unsignedHeads(pool: Pool): Promise<UnsignedHead[]> {
  try {
    return (await pool.query<UnsignedHead>(UNSIGNED_HEADS)).rows;
  } catch (error) {
    if ((error as { code?: string }).code === '42P01') return [];
    throw error;
  }
}

/** The newest checkpoint of a project's audit stream, read from the mark on. */
async function newestCheckpoint(
  store: EventStore,
  stream: string,
  fromRevision: bigint,
): Promise<RecordedEvent | undefined> {
  let events = await store.readStream(stream, { fromRevision });
  // A mark past the stream's end (a restored database): read the stream whole.
  if (events.length === 0 && fromRevision > 0n) events = await store.readStream(stream);
  return events.at(-1);
}
