import { Router } from 'express';
import { z } from 'zod';
import { CAPABILITY_KEYS, findCapability } from '../../domain/catalogue/index.js';
import { CONNECTIVITY_STATES } from '../../domain/connectivity/events.js';
import { NotFound } from '../../domain/errors.js';
import { QUALITY_MARKERS, qualityOf, startOfLocalDay } from '../../domain/readings/index.js';
import type { Pool } from '../../infra/postgres/pool.js';
import { findDevice } from '../../projections/devices/queries.js';
import { findSite } from '../../projections/sites/queries.js';
import type { LagFigures } from '../../projections/lag.js';
import { STATE_PROJECTOR_NAME } from '../../projections/state/projector.js';
import { readDeviceState, type StateEntry } from '../../projections/state/queries.js';
import { requireScope } from '../auth/require-scope.js';
import { noQuerySchema, parseQuery } from '../validation.js';
import {
  ok,
  pathParameter,
  secured,
  INVALID_QUERY,
  NO_SUCH_DEVICE,
  type OperationDeclaration,
} from '../openapi/operation.js';

/** Envelope and entries are camelCase, as the spec's State record. */
const stateEntrySchema = z.object({
  capability: z.string(),
  value: z.union([z.number(), z.boolean(), z.string()]).meta({
    description: 'As reported, never coerced; text only for text capabilities (evse.state, hvac.mode).',
  }),
  unit: z.string(),
  quality: z
    .array(z.enum(QUALITY_MARKERS))
    .meta({ description: '["valid"] when fine; any other marker means suspect (docs/telemetry.md).' }),
  deviceTime: z.iso
    .datetime()
    .nullable()
    .meta({ description: "The device's own measurement time; null when the device sent none." }),
  serverTime: z.iso.datetime().meta({ description: 'When the reading was received; use it for ordering.' }),
});

export const deviceStateSchema = z.object({
  deviceId: z.string(),
  connectivity: z
    .enum(['unknown', ...CONNECTIVITY_STATES])
    .meta({ description: 'As last observed; unknown until the edge has reported on the device.' }),
  lastSeenAt: z.iso.datetime().nullable().meta({ description: 'Last contact; null when never heard from.' }),
  state: z.array(stateEntrySchema).meta({ description: 'One entry per capability that has a value.' }),
});

type StateWire = z.output<typeof deviceStateSchema>;

const CATALOGUE_ORDER = new Map<string, number>(CAPABILITY_KEYS.map((k, i) => [k, i]));

/** GET /devices/{publicId}/state (mounted under /v1). */
/**
 * How fresh the answer is, in headers (the body is the spec's State record): the state projector's lag as
 * last measured, and when. Absent where this process measures no lag.
 */
export const FRESHNESS_HEADERS = {
  lagSeconds: 'X-Projection-Lag-Seconds',
  measuredAt: 'X-Projection-Lag-Measured-At',
} as const;

export function deviceStateRoutes(deps: { pool: Pool; now: () => number; lag?: LagFigures }): Router {
  const router = Router();
  router.get('/devices/:publicId/state', requireScope('devices:read'), async (req, res) => {
    parseQuery(noQuerySchema, req.query);
    const projectId = req.principal!.projectId;
    const device = await findDevice(deps.pool, projectId, String(req.params.publicId));
    if (!device) throw new NotFound('device');
    const state = await readDeviceState(deps.pool, device.deviceId);
    const nowMs = deps.now();
    const siteDayStartMs = await siteDayStart(deps.pool, projectId, device.siteId, state.entries, nowMs);
    const entries = state.entries
      .filter((e) => findCapability(e.capability) !== undefined)
      .sort((a, b) => CATALOGUE_ORDER.get(a.capability)! - CATALOGUE_ORDER.get(b.capability)!);
    const body: StateWire = {
      deviceId: device.deviceId,
      connectivity: (state.connectivity as StateWire['connectivity'] | null) ?? 'unknown',
      lastSeenAt: state.lastSeenAt?.toISOString() ?? null,
      state: entries.map((e) => ({
        capability: e.capability,
        value: e.value,
        unit: e.unit,
        quality: qualityOf({
          capability: findCapability(e.capability)!,
          serverTimeMs: e.serverTime.getTime(),
          deviceTimeMs: e.deviceTime?.getTime(),
          nowMs,
          siteDayStartMs,
        }),
        deviceTime: e.deviceTime?.toISOString() ?? null,
        serverTime: e.serverTime.toISOString(),
      })),
    };
    const lag = deps.lag?.lagOf(STATE_PROJECTOR_NAME);
    if (lag) {
      res.set(FRESHNESS_HEADERS.lagSeconds, lag.seconds.toFixed(3));
      res.set(FRESHNESS_HEADERS.measuredAt, lag.measuredAt.toISOString());
    }
    res.set('Cache-Control', 'no-store').json(body);
  });
  return router;
}

/** Start of the site's current local day, looked up only when a daily counter needs it. */
async function siteDayStart(
  pool: Pool,
  projectId: string,
  siteId: string,
  entries: readonly StateEntry[],
  nowMs: number,
): Promise<number | undefined> {
  if (!entries.some((e) => findCapability(e.capability)?.aggregation === 'counter_daily')) return undefined;
  const site = await findSite(pool, projectId, siteId);
  return site && startOfLocalDay(nowMs, site.timezone);
}

/** The OpenAPI operations of these routes (document.ts assembles them). */
export const deviceStateOperations: readonly OperationDeclaration[] = [
  [
    'get',
    '/v1/devices/:publicId/state',
    secured('devices:read', {
      operationId: 'getDeviceState',
      summary: 'Latest value of each capability, with quality markers and connectivity',
      description:
        'A capability absent from state[] has no value yet. Quality and connectivity: docs/telemetry.md.',
      parameters: [pathParameter('publicId')],
      responses: {
        200: ok('DeviceState', 'The state; an empty state[] when nothing was reported yet.', {
          [FRESHNESS_HEADERS.lagSeconds]: {
            description: 'How far the read models were behind the event store, in seconds (3 decimals).',
            schema: { type: 'number', minimum: 0 },
          },
          [FRESHNESS_HEADERS.measuredAt]: {
            description: 'When that lag was measured.',
            schema: { type: 'string', format: 'date-time' },
          },
        }),
        400: INVALID_QUERY,
        404: NO_SUCH_DEVICE,
      },
    }),
  ],
];
