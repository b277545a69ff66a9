import { Router, type Response } from 'express';
import { z } from 'zod';
import { CAPABILITY_KEYS, findCapability } from '../../domain/catalogue/index.js';
import { NotFound } from '../../domain/errors.js';
import { DAY_MS, HOUR_MS, MINUTE_MS } from '../../domain/time.js';
import {
  MAX_WINDOW_MS,
  RESOLUTIONS,
  TELEMETRY_AGGREGATIONS,
  windowProblem,
  type Resolution,
} from '../../domain/readings/index.js';
import type { Pool } from '../../infra/postgres/pool.js';
import { findDevice } from '../../projections/devices/queries.js';
import { requireScope } from '../auth/require-scope.js';
import { HttpProblem } from '../http-errors.js';
import { parseQuery, queryProblem } from '../validation.js';
import { RAW_POINT_LIMIT, bucketPointsJson, rawPoints, servedAggregations } from './telemetry-points.js';
import {
  error,
  ok,
  pathParameter,
  secured,
  NO_SUCH_DEVICE,
  queryParameters,
  type OperationDeclaration,
} from '../openapi/operation.js';

const days = (r: Resolution) => MAX_WINDOW_MS[r] / DAY_MS;

/**
 * The most stored bucket rows one query may load (buckets of the table it reads × capabilities): 5m is
 * served from 1m rows, so a month of it is 44,640 rows per capability. Raw answers page instead (nextFrom).
 */
const MAX_STORED_ROWS = 50_000;
const SOURCE_ROW_MS: Readonly<Record<Exclude<Resolution, 'raw'>, number>> = {
  '1m': MINUTE_MS,
  '5m': MINUTE_MS,
  '1h': HOUR_MS,
  '1d': DAY_MS,
};
const storedRows = (resolution: Exclude<Resolution, 'raw'>, fromMs: number, toMs: number) =>
  Math.ceil((toMs - fromMs) / SOURCE_ROW_MS[resolution]);

const timestamp = (description: string) =>
  z.iso
    .datetime({ offset: true, error: (issue) => (issue.input === undefined ? 'missing' : 'invalid_time') })
    .meta({ description });

const telemetryQuerySchema = z.strictObject({
  from: timestamp('Window start, inclusive. ISO 8601 with Z or an offset. Required.'),
  to: timestamp('Window end, exclusive. ISO 8601 with Z or an offset. Required.'),
  capabilities: z.string().max(2048).optional().meta({
    description:
      'Comma-separated catalogue keys. Default: every capability of the device (text ones only at raw).',
  }),
  resolution: z
    .enum(RESOLUTIONS, { error: 'unknown_resolution' })
    .default('1h')
    .meta({
      description:
        `Bucket width, default 1h. Widest window: raw ${days('raw')} day, 1m ${days('1m')} days, ` +
        `5m ${days('5m')} days, 1h ${days('1h')} days, 1d ${days('1d')} days.`,
    }),
  aggregation: z.enum(TELEMETRY_AGGREGATIONS, { error: 'unknown_aggregation' }).default('avg').meta({
    description:
      'Default avg. Ignored for raw. Counters never use avg or sum: the response says what was used.',
  }),
});

const bucketPointSchema = z.object({
  capability_key: z.string(),
  bucket: z.iso.datetime().meta({ description: 'Bucket start.' }),
  value: z.number(),
  samples: z.number().int().meta({ description: 'Readings in the bucket; much fewer than usual is a gap.' }),
});

const rawPointSchema = z.object({
  capability_key: z.string(),
  time: z.iso.datetime().meta({ description: 'The time the reading is filed under (docs/telemetry.md).' }),
  value: z.union([z.number(), z.boolean(), z.string()]).meta({ description: 'As reported, not coerced.' }),
  device_time: z.iso.datetime().nullable(),
  server_time: z.iso.datetime(),
});

export const telemetrySchema = z.object({
  deviceId: z.string(),
  resolution: z.enum(RESOLUTIONS),
  aggregation: z.string().meta({
    description:
      'What was used: one function for every capability, "mixed" when they differ (see aggregations), ' +
      '"none" for raw.',
  }),
  aggregations: z
    .record(z.string(), z.enum(TELEMETRY_AGGREGATIONS))
    .optional()
    .meta({ description: 'The function used per capability (bucketed resolutions).' }),
  points: z.array(z.union([bucketPointSchema, rawPointSchema])),
  nextFrom: z.iso
    .datetime()
    .optional()
    .meta({ description: `Raw only: the answer stopped at ${RAW_POINT_LIMIT} points; continue from here.` }),
});

type TelemetryWire = z.output<typeof telemetrySchema>;

/** GET /devices/{publicId}/telemetry (mounted under /v1). */
export function telemetryRoutes(deps: { pool: Pool }): Router {
  const router = Router();
  router.get('/devices/:publicId/telemetry', requireScope('telemetry:read'), async (req, res) => {
    const query = parseQuery(telemetryQuerySchema, req.query);
    const fromMs = Date.parse(query.from);
    const toMs = Date.parse(query.to);
    const problem = windowProblem(query.resolution, fromMs, toMs);
    if (problem) throw queryProblem(problem, problem === 'from_after_to' ? 'from' : 'to');
    const asked = askedCapabilities(query.capabilities, query.resolution);
    const deviceId = String(req.params.publicId);
    const answer = (capabilities: string[]) =>
      telemetryAnswer(deps.pool, { deviceId, capabilities, fromMs, toMs }, query);

    // Named capabilities need nothing from the device's record: its points are read while the device is
    // looked up, a round trip less to wait for. They are sent only if the device is the caller's. A read
    // for a device that is not costs no more than the caller may already ask of its own devices (the
    // stored-rows cap and the rate limit bound both), and its 404 does not wait for it.
    const pointsRead = asked && answer(asked);
    // Looked at only once the device is known; until then its failure (too_many_points, or a database
    // error) must not surface as an unhandled rejection, nor outrank the 404.
    pointsRead?.catch(() => {});
    const device = await findDevice(deps.pool, req.principal!.projectId, deviceId);
    if (!device) throw new NotFound('device');
    const send = await (pointsRead ?? answer(defaultCapabilities(device.capabilities, query.resolution)));
    send(res.set('Cache-Control', 'no-store'));
  });
  return router;
}

type TelemetryQuery = z.output<typeof telemetryQuerySchema>;

/**
 * Reads the answer for one device's window and returns what writes it; the caller sends it only once the
 * device is known to be the requester's. Throws too_many_points before reading when the window holds more
 * stored rows than one query may load.
 */
async function telemetryAnswer(
  pool: Pool,
  window: { deviceId: string; capabilities: string[]; fromMs: number; toMs: number },
  query: TelemetryQuery,
): Promise<(res: Response) => void> {
  const { deviceId, capabilities, fromMs, toMs } = window;
  if (
    query.resolution !== 'raw' &&
    storedRows(query.resolution, fromMs, toMs) * capabilities.length > MAX_STORED_ROWS
  ) {
    throw new HttpProblem(400, 'invalid_query', {
      reason: 'too_many_points',
      parameter: 'capabilities',
      maxPoints: MAX_STORED_ROWS,
    });
  }
  if (query.resolution === 'raw') {
    const { points, nextFrom } = await rawPoints(pool, window);
    const body: TelemetryWire = { deviceId, resolution: 'raw', aggregation: 'none', points };
    if (nextFrom) body.nextFrom = nextFrom;
    return (res) => res.json(body);
  }
  const served = servedAggregations(capabilities, query.aggregation);
  const used = new Set(served.values());
  const envelope: Omit<TelemetryWire, 'points'> = {
    deviceId,
    resolution: query.resolution,
    aggregation: used.size > 1 ? 'mixed' : ([...used][0] ?? query.aggregation),
    aggregations: Object.fromEntries(served),
  };
  const points = await bucketPointsJson(pool, window, query.resolution, served);
  // The points arrive as JSON text (up to 50,000 of them): spliced in, not parsed and written again.
  return (res) => res.type('json').send(`${JSON.stringify(envelope).slice(0, -1)},"points":${points}}`);
}

/**
 * The `capabilities` parameter: catalogue keys, duplicates dropped, in the order given. A key the device
 * does not (or no longer) offer is allowed and simply has no points. Text has no bucketed form.
 */
function askedCapabilities(list: string | undefined, resolution: Resolution): string[] | undefined {
  if (list === undefined) return undefined;
  const keys = [...new Set(list.split(',').map((k) => k.trim()))];
  for (const key of keys) {
    const capability = findCapability(key);
    if (!capability)
      throw queryProblem(key === '' ? 'empty_capability' : 'unknown_capability', 'capabilities');
    if (resolution !== 'raw' && capability.type === 'text') throw queryProblem('not_numeric', 'capabilities');
  }
  return keys;
}

const CATALOGUE_ORDER = new Map<string, number>(CAPABILITY_KEYS.map((k, i) => [k, i]));

function defaultCapabilities(offered: readonly string[], resolution: Resolution): string[] {
  return offered
    .filter((key) => {
      const capability = findCapability(key);
      return capability !== undefined && (resolution === 'raw' || capability.type !== 'text');
    })
    .sort((a, b) => CATALOGUE_ORDER.get(a)! - CATALOGUE_ORDER.get(b)!);
}

/** The OpenAPI operations of these routes (document.ts assembles them). */
export const telemetryOperations: readonly OperationDeclaration[] = [
  [
    'get',
    '/v1/devices/:publicId/telemetry',
    secured('telemetry:read', {
      operationId: 'getDeviceTelemetry',
      summary: 'History of a device: pre-aggregated buckets, or raw readings',
      description:
        'Buckets whose start lies in [from, to), oldest first, capability by capability; empty buckets are ' +
        'absent. Counters never use avg or sum; `aggregation` says what was used. docs/telemetry.md.',
      parameters: [pathParameter('publicId'), ...queryParameters(telemetryQuerySchema)],
      responses: {
        200: ok('Telemetry', 'The points.'),
        400: error('Bad query (`invalid_query`, with `reason` and `parameter`).'),
        404: NO_SUCH_DEVICE,
      },
    }),
  ],
];
