import { camelCased } from '../../infra/postgres/camel-cased.js';
import type { Pool } from '../../infra/postgres/pool.js';
import { keysetPage, type PageRequest } from '../keyset-page.js';

export interface CommandRow {
  readonly commandId: string;
  readonly deviceId: string;
  readonly capability: string;
  readonly value: boolean | number | string;
  readonly mode: string;
  readonly ttlSeconds: number;
  readonly status: string;
  readonly acceptedAt: Date;
  readonly expiresAt: Date;
  readonly updatedAt: Date;
  readonly attempts: number;
  readonly outcome: Readonly<Record<string, string>> | null;
}

/** Filters combine: one status, and acceptance time in [from, to). */
export interface CommandFilter {
  readonly status?: string;
  readonly from?: Date;
  readonly to?: Date;
}

export interface CommandPage {
  readonly commands: readonly CommandRow[];
  /** Keyset position after the last command of the page; undefined on the last page. */
  readonly next: bigint | undefined;
}

const COLUMNS = `seq, command_id, device_id, capability, value, mode, ttl_seconds, status, accepted_at, expires_at,
                 updated_at, attempts, outcome`;

const COMMAND_PAGE = `
  SELECT ${COLUMNS} FROM commands
   WHERE project_id = $1 AND device_id = $2
     AND ($3::text IS NULL OR status = $3)
     AND ($4::timestamptz IS NULL OR accepted_at >= $4)
     AND ($5::timestamptz IS NULL OR accepted_at < $5)
     AND seq > $6
   ORDER BY seq
   LIMIT $7`;

const ONE_COMMAND = `SELECT ${COLUMNS} FROM commands WHERE project_id = $1 AND command_id = $2`;

const PENDING_DEADLINES = `
  SELECT command_id, device_id, expires_at FROM commands
   WHERE status IN ('queued', 'sent') AND expires_at <= $1
   ORDER BY expires_at
   LIMIT $2`;

interface Row {
  seq: string;
  command_id: string;
  device_id: string;
  capability: string;
  value: boolean | number | string;
  mode: string;
  ttl_seconds: number;
  status: string;
  accepted_at: Date;
  expires_at: Date;
  updated_at: Date;
  attempts: number;
  outcome: Record<string, string> | null;
}

/** One page of a device's commands in acceptance order, after keyset position `after` (0 for the first). */
export async function listCommands(
  pool: Pool,
  projectId: string,
  deviceId: string,
  filter: CommandFilter,
  page: PageRequest,
): Promise<CommandPage> {
  const { rows, next } = await keysetPage<Row>(
    pool,
    COMMAND_PAGE,
    [projectId, deviceId, filter.status ?? null, filter.from ?? null, filter.to ?? null],
    page,
  );
  return { commands: rows.map(toRow), next };
}

/** The command if it belongs to this project; another project's command is simply not found. */
export async function findCommand(
  pool: Pool,
  projectId: string,
  commandId: string,
): Promise<CommandRow | undefined> {
  const { rows } = await pool.query<Row>(ONE_COMMAND, [projectId, commandId]);
  return rows[0] && toRow(rows[0]);
}

/** What the expiry sweep needs of a pending command: which one, on which device, and when its TTL ends. */
export type CommandDeadline = Pick<CommandRow, 'commandId' | 'deviceId' | 'expiresAt'>;

/** Commands still pending by this read model whose TTL ends by `until`, soonest first, at most `limit`. */
export async function listPendingDeadlines(
  pool: Pool,
  until: Date,
  limit: number,
): Promise<CommandDeadline[]> {
  const { rows } = await pool.query<Pick<Row, 'command_id' | 'device_id' | 'expires_at'>>(PENDING_DEADLINES, [
    until,
    limit,
  ]);
  return rows.map(camelCased);
}

/** The record of a row; `seq` only orders pages. */
function toRow({ seq: _seq, ...columns }: Row): CommandRow {
  return camelCased(columns);
}
