import { Router } from 'express';
import { z } from 'zod';
import { DEVICE_KINDS, DEVICE_PROFILES, DEVICE_STATUSES } from '../../domain/devices/index.js';
import { NotFound } from '../../domain/errors.js';
import type { Pool } from '../../infra/postgres/pool.js';
import { findDevice, listDevices, type DeviceRecord } from '../../projections/devices/queries.js';
import { requireScope } from '../auth/require-scope.js';
import { deviceCursors } from '../pagination/device-cursor.js';
import { noQuerySchema, parseQuery } from '../validation.js';
import {
  ok,
  pathParameter,
  secured,
  INVALID_QUERY,
  NO_SUCH_DEVICE,
  queryParameters,
  type OperationDeclaration,
} from '../openapi/operation.js';

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 200;

/** Device fields are snake_case, like the spec's product_model, parent_hub_id and site_id. */
export const deviceSchema = z.object({
  id: z.string().meta({ description: 'The public id: the {publicId} of paths and the deviceId elsewhere.' }),
  status: z.enum(DEVICE_STATUSES),
  manufacturer: z.string().meta({ description: 'As reported by the device, case preserved.' }),
  product_model: z.string().meta({ description: 'As reported by the device, case preserved.' }),
  parent_hub_id: z
    .string()
    .nullable()
    .meta({ description: 'Public id of the hub the device is reached through; null for a hub.' }),
  site_id: z.string(),
  kind: z.enum(DEVICE_KINDS),
  profile: z.enum(DEVICE_PROFILES).meta({ description: 'Catalogue profile; a draft cannot be armed.' }),
  capabilities: z.array(z.string()).meta({ description: 'Catalogue keys the device offers.' }),
  created_at: z.iso.datetime().meta({ description: 'When the device was registered (UTC).' }),
});

/** The limit query parameter of the keyset-paged lists: a positive integer, capped (never refused) at MAX_PAGE_SIZE. */
export const pageLimitSchema = z
  .string()
  .regex(/^[0-9]{1,9}$/, { error: 'not_a_positive_integer' })
  .transform(Number)
  .pipe(z.number().int().min(1, { error: 'not_a_positive_integer' }).max(999_999_999))
  .optional();

const deviceListQuerySchema = z.strictObject({
  status: z
    .enum(DEVICE_STATUSES, { error: 'unknown_status' })
    .optional()
    .meta({ description: 'Lifecycle status; an unknown value is refused (400).' }),
  model: z
    .string()
    .min(1)
    .max(128)
    .optional()
    .meta({ description: 'Exact, case-sensitive match on product_model.' }),
  site_id: z.string().min(1).max(64).optional(),
  cursor: z
    .string()
    .min(1)
    .max(512)
    .optional()
    .meta({ description: 'The nextCursor of the previous page, unchanged, with the same filters.' }),
  limit: pageLimitSchema.meta({
    description: `Page size, default ${DEFAULT_PAGE_SIZE}; values above ${MAX_PAGE_SIZE} are served as ${MAX_PAGE_SIZE}.`,
  }),
});

export const deviceListSchema = z.object({
  devices: z.array(deviceSchema),
  nextCursor: z
    .string()
    .optional()
    .meta({ description: 'Present while more devices follow; absent on the last page.' }),
});

export type DeviceWire = z.output<typeof deviceSchema>;

export function toDeviceWire(device: DeviceRecord): DeviceWire {
  return {
    id: device.deviceId,
    status: device.status as DeviceWire['status'],
    manufacturer: device.manufacturer,
    product_model: device.productModel,
    parent_hub_id: device.parentHubId,
    site_id: device.siteId,
    kind: device.kind as DeviceWire['kind'],
    profile: device.profile as DeviceWire['profile'],
    capabilities: [...device.capabilities],
    created_at: device.createdAt.toISOString(),
  };
}

/** GET /devices and GET /devices/{publicId} (mounted under /v1), scoped to the caller's project. */
export function deviceRoutes(deps: { pool: Pool; cursorKey: (name: string) => Promise<Buffer> }): Router {
  const router = Router();
  const cursors = deviceCursors(deps.cursorKey);

  router.get('/devices', requireScope('devices:read'), async (req, res) => {
    const projectId = req.principal!.projectId;
    const query = parseQuery(deviceListQuerySchema, req.query);
    const filter = { status: query.status, productModel: query.model, siteId: query.site_id };
    const after = query.cursor === undefined ? 0n : await cursors.open(projectId, filter, query.cursor);
    const limit = Math.min(query.limit ?? DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE);
    const page = await listDevices(deps.pool, projectId, filter, { after, limit });
    const body: z.output<typeof deviceListSchema> = { devices: page.devices.map(toDeviceWire) };
    if (page.next !== undefined) body.nextCursor = await cursors.seal(projectId, filter, page.next);
    res.set('Cache-Control', 'no-store').json(body);
  });

  router.get('/devices/:publicId', requireScope('devices:read'), async (req, res) => {
    parseQuery(noQuerySchema, req.query);
    const device = await findDevice(deps.pool, req.principal!.projectId, String(req.params.publicId));
    if (!device) throw new NotFound('device');
    res.set('Cache-Control', 'no-store').json(toDeviceWire(device));
  });

  return router;
}

/** The OpenAPI operations of these routes (document.ts assembles them). */
export const deviceOperations: readonly OperationDeclaration[] = [
  [
    'get',
    '/v1/devices',
    secured('devices:read', {
      operationId: 'listDevices',
      summary: "A page of the project's devices",
      description:
        'Filters combine and match exactly (case-sensitive). Pages are in registration order; follow ' +
        'nextCursor, with the same filters, until it is absent. Devices registered during a walk appear at its end.',
      parameters: queryParameters(deviceListQuerySchema),
      responses: {
        200: ok('DeviceList', 'A page of devices; an empty list is a valid answer.'),
        400: INVALID_QUERY,
      },
    }),
  ],
  [
    'get',
    '/v1/devices/:publicId',
    secured('devices:read', {
      operationId: 'getDevice',
      summary: 'One device',
      parameters: [pathParameter('publicId')],
      responses: {
        200: ok('Device', 'The device.'),
        400: INVALID_QUERY,
        404: NO_SUCH_DEVICE,
      },
    }),
  ],
];
