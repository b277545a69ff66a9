import type { CandidateState, CloseReason, WindowState } from '../../domain/pairing/index.js';
import { camelCased } from '../../infra/postgres/camel-cased.js';
import type { Pool } from '../../infra/postgres/pool.js';

export interface PairingSessionRow {
  readonly sessionId: string;
  readonly projectId: string;
  readonly hubId: string;
  readonly state: WindowState;
  readonly openedAt: Date;
  readonly closesAt: Date;
  readonly closedAt: Date | null;
  readonly closeReason: CloseReason | null;
}

export interface PairingCandidateRow {
  readonly sessionId: string;
  readonly ieeeAddr: string;
  readonly manufacturer: string;
  readonly productModel: string;
  readonly capabilities: readonly string[];
  readonly state: CandidateState;
  readonly deviceId: string | null;
  readonly joinedAt: Date;
}

const SESSION_COLUMNS = `session_id, project_id, hub_id, state, opened_at, closes_at, closed_at, close_reason`;
const CANDIDATE_COLUMNS = `session_id, ieee_addr, manufacturer, product_model, capabilities, state, device_id, joined_at`;

const SESSION_BY_ID = `SELECT ${SESSION_COLUMNS} FROM pairing_sessions WHERE session_id = $1 AND project_id = $2`;
const CANDIDATES_OF_SESSION = `
  SELECT ${CANDIDATE_COLUMNS} FROM pairing_candidates WHERE session_id = $1 ORDER BY ord`;
const CANDIDATE = `SELECT ${CANDIDATE_COLUMNS} FROM pairing_candidates WHERE session_id = $1 AND ieee_addr = $2`;
const OPEN_SESSIONS = `SELECT ${SESSION_COLUMNS} FROM pairing_sessions WHERE state = 'open' ORDER BY closes_at`;
const OPEN_SESSION_OF_HUB = `SELECT ${SESSION_COLUMNS} FROM pairing_sessions WHERE hub_id = $1 AND state = 'open'`;
/** The candidates adopted through hub $1 (exported for tests that watch when it is asked). */
export const ADOPTED_ON_HUB = `
  SELECT ${CANDIDATE_COLUMNS} FROM pairing_candidates WHERE hub_id = $1 AND state = 'adopted' ORDER BY joined_at`;
const REJECTED_ON_HUB = `
  SELECT session_id, ieee_addr FROM pairing_rejections WHERE hub_id = $1 ORDER BY ieee_addr`;

interface SessionDbRow {
  session_id: string;
  project_id: string;
  hub_id: string;
  state: WindowState;
  opened_at: Date;
  closes_at: Date;
  closed_at: Date | null;
  close_reason: CloseReason | null;
}

interface CandidateDbRow {
  session_id: string;
  ieee_addr: string;
  manufacturer: string;
  product_model: string;
  capabilities: string[];
  state: CandidateState;
  device_id: string | null;
  joined_at: Date;
}

/** The session if it belongs to the project; another project's session is simply not found. */
export async function findPairingSession(
  pool: Pool,
  projectId: string,
  sessionId: string,
): Promise<PairingSessionRow | undefined> {
  const { rows } = await pool.query<SessionDbRow>(SESSION_BY_ID, [sessionId, projectId]);
  return rows[0] && camelCased(rows[0]);
}

export async function listCandidates(pool: Pool, sessionId: string): Promise<PairingCandidateRow[]> {
  const { rows } = await pool.query<CandidateDbRow>(CANDIDATES_OF_SESSION, [sessionId]);
  return rows.map(camelCased);
}

export async function findCandidate(
  pool: Pool,
  sessionId: string,
  ieeeAddr: string,
): Promise<PairingCandidateRow | undefined> {
  const { rows } = await pool.query<CandidateDbRow>(CANDIDATE, [sessionId, ieeeAddr]);
  return rows[0] && camelCased(rows[0]);
}

/** Every window the read model still shows open, earliest deadline first. */
export async function listOpenSessions(pool: Pool): Promise<PairingSessionRow[]> {
  const { rows } = await pool.query<SessionDbRow>(OPEN_SESSIONS);
  return rows.map(camelCased);
}

export async function findOpenSessionOfHub(
  pool: Pool,
  hubId: string,
): Promise<PairingSessionRow | undefined> {
  const { rows } = await pool.query<SessionDbRow>(OPEN_SESSION_OF_HUB, [hubId]);
  return rows[0] && camelCased(rows[0]);
}

/** What a hub's agent must know after reconnecting: the devices adopted through it, the addresses refused. */
export async function listHubDecisions(
  pool: Pool,
  hubId: string,
): Promise<{
  adopted: PairingCandidateRow[];
  rejected: { sessionId: string; ieeeAddr: string }[];
}> {
  const [adopted, rejected] = await Promise.all([
    pool.query<CandidateDbRow>(ADOPTED_ON_HUB, [hubId]),
    pool.query<{ session_id: string; ieee_addr: string }>(REJECTED_ON_HUB, [hubId]),
  ]);
  return {
    adopted: adopted.rows.map(camelCased),
    rejected: rejected.rows.map(camelCased),
  };
}
