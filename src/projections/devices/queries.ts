import { camelCased } from '../../infra/postgres/camel-cased.js';
import type { Pool } from '../../infra/postgres/pool.js';
import { keysetPage, type PageRequest } from '../keyset-page.js';

export interface DeviceRecord {
  /** The public id. */
  readonly deviceId: string;
  readonly status: string;
  readonly manufacturer: string;
  readonly productModel: string;
  readonly parentHubId: string | null;
  readonly siteId: string;
  readonly kind: string;
  readonly profile: string;
  readonly capabilities: readonly string[];
  readonly createdAt: Date;
}

/** Filters combine; each one is an exact, case-sensitive match. */
export interface DeviceFilter {
  readonly status?: string;
  readonly productModel?: string;
  readonly siteId?: string;
}

export interface DevicePage {
  readonly devices: readonly DeviceRecord[];
  /** Keyset position after the last device of the page; undefined when the page is the last one. */
  readonly next: bigint | undefined;
}

const COLUMNS = `seq, device_id, status, manufacturer, product_model, parent_hub_id, site_id, kind, profile,
                 capabilities, created_at`;

// A null parameter switches its filter off; the planner folds that away per execution.
const DEVICE_PAGE = `
  SELECT ${COLUMNS} FROM devices
   WHERE project_id = $1
     AND ($2::text IS NULL OR status = $2)
     AND ($3::text IS NULL OR product_model = $3)
     AND ($4::text IS NULL OR site_id = $4)
     AND seq > $5
   ORDER BY seq
   LIMIT $6`;

const ONE_DEVICE = `SELECT ${COLUMNS} FROM devices WHERE project_id = $1 AND device_id = $2`;

interface DeviceRow {
  seq: string;
  device_id: string;
  status: string;
  manufacturer: string;
  product_model: string;
  parent_hub_id: string | null;
  site_id: string;
  kind: string;
  profile: string;
  capabilities: string[];
  created_at: Date;
}

/**
 * One page of a project's devices in registration order, after keyset position `after` (0 for the first
 * page). Devices registered during a walk get higher positions, so they can only appear at its end.
 */
export async function listDevices(
  pool: Pool,
  projectId: string,
  filter: DeviceFilter,
  page: PageRequest,
): Promise<DevicePage> {
  const { rows, next } = await keysetPage<DeviceRow>(
    pool,
    DEVICE_PAGE,
    [projectId, filter.status ?? null, filter.productModel ?? null, filter.siteId ?? null],
    page,
  );
  return { devices: rows.map(toRecord), next };
}

/** The device if it exists in this project; a device of another project is simply not found. */
export async function findDevice(
  pool: Pool,
  projectId: string,
  deviceId: string,
): Promise<DeviceRecord | undefined> {
  // Named, so each connection parses and plans it once: every device-scoped API request runs it. A rebuild
  // that swaps the table in makes PostgreSQL plan it again by itself.
  const { rows } = await pool.query<DeviceRow>({
    name: 'devices.one',
    text: ONE_DEVICE,
    values: [projectId, deviceId],
  });
  return rows[0] && toRecord(rows[0]);
}

/** The record of a row; `seq` only orders pages. */
function toRecord({ seq: _seq, ...columns }: DeviceRow): DeviceRecord {
  return camelCased(columns);
}
