import { camelCased } from '../../infra/postgres/camel-cased.js';
import type { Pool } from '../../infra/postgres/pool.js';

export interface AgentRow {
  readonly agentId: string;
  readonly projectId: string;
  readonly siteId: string;
  readonly hubId: string;
  readonly revoked: boolean;
  /** The hub and every device reached through it. */
  readonly deviceIds: readonly string[];
}

const AGENT_COLUMNS = `
  a.agent_id, a.project_id, a.site_id, a.hub_id, a.revoked,
  ARRAY(SELECT d.device_id FROM agent_devices d WHERE d.hub_id = a.hub_id ORDER BY d.device_id) AS children`;

const AGENT_BY_ID = `SELECT ${AGENT_COLUMNS} FROM agents a WHERE a.agent_id = $1`;
const AGENT_BY_HUB = `SELECT ${AGENT_COLUMNS} FROM agents a WHERE a.hub_id = $1`;
/** The agent that speaks for device $1 (exported for tests that watch when it is asked). */
export const AGENT_ID_OF_DEVICE = `
  SELECT a.agent_id, a.revoked FROM agents a
   WHERE a.hub_id = COALESCE((SELECT d.hub_id FROM agent_devices d WHERE d.device_id = $1), $1)`;

interface Row {
  agent_id: string;
  project_id: string;
  site_id: string;
  hub_id: string;
  revoked: boolean;
  children: string[];
}

export async function findAgent(pool: Pool, agentId: string): Promise<AgentRow | undefined> {
  const { rows } = await pool.query<Row>(AGENT_BY_ID, [agentId]);
  return rows[0] && toAgent(rows[0]);
}

export async function findAgentOfHub(pool: Pool, hubId: string): Promise<AgentRow | undefined> {
  const { rows } = await pool.query<Row>(AGENT_BY_HUB, [hubId]);
  return rows[0] && toAgent(rows[0]);
}

function toAgent({ children, ...columns }: Row): AgentRow {
  return { ...camelCased(columns), deviceIds: [columns.hub_id, ...children] };
}

/** The agent that speaks for a device: the agent of its hub, or of the device itself when it is a hub. */
export async function findAgentIdOfDevice(
  pool: Pool,
  deviceId: string,
): Promise<{ agentId: string; revoked: boolean } | undefined> {
  const { rows } = await pool.query<{ agent_id: string; revoked: boolean }>(AGENT_ID_OF_DEVICE, [deviceId]);
  return rows[0] && camelCased(rows[0]);
}
