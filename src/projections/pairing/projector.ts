import { readFileSync } from 'node:fs';
import type { PairingEvent } from '../../domain/pairing/index.js';
import type { PoolClient } from '../../infra/postgres/pool.js';
import type { Projector } from '../projector.js';

const schemaSql = readFileSync(new URL('./schema.sql', import.meta.url), 'utf8');

const INSERT_SESSION = `
  INSERT INTO pairing_sessions (session_id, project_id, hub_id, state, opened_at, closes_at)
  VALUES ($1, $2, $3, 'open', $4, $5)
  ON CONFLICT (session_id) DO NOTHING`;

const CLOSE_SESSION = `
  UPDATE pairing_sessions SET state = 'closed', closed_at = $2, close_reason = $3 WHERE session_id = $1`;

// A candidate joins a session once, or again after its rejection was cleared: then it is pending anew.
const UPSERT_CANDIDATE = `
  INSERT INTO pairing_candidates (session_id, ieee_addr, project_id, hub_id, ord, manufacturer, product_model,
                                  capabilities, state, device_id, joined_at)
  VALUES ($1, $2, $3, $4,
          (SELECT coalesce(max(ord), 0) + 1 FROM pairing_candidates WHERE session_id = $1),
          $5, $6, $7, $8, NULL, $9)
  ON CONFLICT (session_id, ieee_addr) DO UPDATE
     SET manufacturer = EXCLUDED.manufacturer, product_model = EXCLUDED.product_model,
         capabilities = EXCLUDED.capabilities, state = EXCLUDED.state, device_id = NULL,
         joined_at = EXCLUDED.joined_at`;

const DECIDE_CANDIDATE = `
  UPDATE pairing_candidates SET state = $3, device_id = $4 WHERE session_id = $1 AND ieee_addr = $2`;

const REMEMBER_REJECTION = `
  INSERT INTO pairing_rejections (hub_id, ieee_addr, session_id) VALUES ($1, $2, $3)
  ON CONFLICT (hub_id, ieee_addr) DO UPDATE SET session_id = EXCLUDED.session_id`;

const FORGET_REJECTION = `DELETE FROM pairing_rejections WHERE hub_id = $1 AND ieee_addr = $2`;

export const PAIRING_PROJECTOR_NAME = 'pairing';

/** Pairing windows and candidates; pairing events are few, so each is applied on its own. */
export function pairingProjector(): Projector {
  return {
    name: PAIRING_PROJECTOR_NAME,
    version: 1,
    eventTypes: [
      'PairingWindowOpened',
      'PairingWindowClosed',
      'CandidateJoined',
      'CandidateAdopted',
      'CandidateRejected',
      'CandidateRejectionCleared',
    ],
    tables: ['pairing_sessions', 'pairing_candidates', 'pairing_rejections'],
    schemaSql,
    async apply(events, db) {
      for (const event of events) await applyOne({ type: event.type, data: event.data } as PairingEvent, db);
    },
  };
}

async function applyOne(e: PairingEvent, db: PoolClient): Promise<void> {
  switch (e.type) {
    case 'PairingWindowOpened':
      await db.query(INSERT_SESSION, [
        e.data.sessionId,
        e.data.projectId,
        e.data.hubId,
        e.data.openedAt,
        e.data.closesAt,
      ]);
      return;
    case 'PairingWindowClosed':
      await db.query(CLOSE_SESSION, [e.data.sessionId, e.data.closedAt, e.data.reason]);
      return;
    case 'CandidateJoined':
      await db.query(UPSERT_CANDIDATE, [
        e.data.sessionId,
        e.data.ieeeAddr,
        e.data.projectId,
        e.data.hubId,
        e.data.manufacturer,
        e.data.productModel,
        e.data.capabilities,
        e.data.state,
        e.data.joinedAt,
      ]);
      return;
    case 'CandidateAdopted':
      await db.query(DECIDE_CANDIDATE, [e.data.sessionId, e.data.ieeeAddr, 'adopted', e.data.deviceId]);
      return;
    case 'CandidateRejected':
      await db.query(DECIDE_CANDIDATE, [e.data.sessionId, e.data.ieeeAddr, 'rejected', null]);
      await db.query(REMEMBER_REJECTION, [e.data.hubId, e.data.ieeeAddr, e.data.sessionId]);
      return;
    case 'CandidateRejectionCleared':
      await db.query(FORGET_REJECTION, [e.data.hubId, e.data.ieeeAddr]);
      return;
    default:
      return;
  }
}
