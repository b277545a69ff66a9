import { Router } from 'express';
import { z } from 'zod';
import { CAPABILITY_KEYS, capabilityKeySchema } from '../../domain/catalogue/index.js';
import type { EventStore } from '../../eventstore/port.js';
import type { Pool } from '../../infra/postgres/pool.js';
import { waitForProjection } from '../../projections/catch-up.js';
import { listBindings } from '../../projections/bindings/queries.js';
import { createBinding } from '../../registry/bindings.js';
import { requireScope } from '../auth/require-scope.js';
import { idempotencyKey, idempotencyKeyHeader, idempotencyKeySchema } from '../idempotency-key.js';
import { noQuerySchema, parseBody, parseQuery } from '../validation.js';
import {
  error,
  ok,
  jsonBody,
  secured,
  INVALID_QUERY,
  NO_SUCH_DEVICE,
  type OperationDeclaration,
} from '../openapi/operation.js';

const label = z.string().min(1);

export const bindingRequestSchema = z.strictObject({
  deviceId: label.max(64).meta({ description: 'Public id of a registered device of your project.' }),
  resourceType: label.max(64).meta({ description: 'Your own type name for the object (free-form).' }),
  resourceId: label.max(256).meta({ description: 'Your identifier of the object.' }),
  channelMapping: z
    .partialRecord(capabilityKeySchema, label.max(128), {
      // zod types this hook narrower than it runs: a key outside the enum arrives as unrecognized_keys.
      error: (issue) => ((issue.code as string) === 'unrecognized_keys' ? 'unknown_capability' : undefined),
    })
    .optional()
    .meta({ description: 'Catalogue key -> your label for it. A labelling aid only.' }),
  idempotencyKey: idempotencyKeySchema.optional(),
});

export const bindingSchema = z.object({
  bindingId: z.string(),
  deviceId: z.string(),
  resourceType: z.string(),
  resourceId: z.string(),
  channelMapping: z.record(z.string(), z.string()).meta({ description: 'Empty when none was given.' }),
  createdAt: z.iso.datetime(),
});

export const bindingCreatedSchema = z.object({ binding: bindingSchema });
export const bindingListSchema = z.object({ bindings: z.array(bindingSchema) });

type BindingWire = z.output<typeof bindingSchema>;

/** A binding as the event holds it (createdAt a string) or as the read model does (a Date). */
interface BindingLike {
  readonly bindingId: string;
  readonly deviceId: string;
  readonly resourceType: string;
  readonly resourceId: string;
  readonly channelMapping: Readonly<Record<string, string>>;
  readonly createdAt: string | Date;
}

const toBindingWire = (b: BindingLike): BindingWire => ({
  bindingId: b.bindingId,
  deviceId: b.deviceId,
  resourceType: b.resourceType,
  resourceId: b.resourceId,
  channelMapping: inCatalogueOrder(b.channelMapping),
  createdAt: typeof b.createdAt === 'string' ? b.createdAt : b.createdAt.toISOString(),
});

// Stores may reorder an object's keys (jsonb does), so answers list them in catalogue order: a replay, the
// first answer and the list then read byte for byte the same.
const CATALOGUE_ORDER = new Map<string, number>(CAPABILITY_KEYS.map((key, i) => [key, i]));
function inCatalogueOrder(mapping: Readonly<Record<string, string>>): Record<string, string> {
  const rank = (key: string) => CATALOGUE_ORDER.get(key) ?? CATALOGUE_ORDER.size;
  return Object.fromEntries(
    Object.entries(mapping).sort(([a], [b]) => rank(a) - rank(b) || (a < b ? -1 : 1)),
  );
}

/**
 * POST and GET /bindings (mounted under /v1, behind the JSON body parser). There is no DELETE: a binding is
 * kept for ever.
 */
export function bindingRoutes(deps: { pool: Pool; store: EventStore; now: () => number }): Router {
  const router = Router();

  router.post('/bindings', requireScope('devices:write'), async (req, res) => {
    parseQuery(noQuerySchema, req.query);
    const { idempotencyKey: bodyKey, channelMapping, ...request } = parseBody(bindingRequestSchema, req.body);
    const outcome = await createBinding(
      deps.store,
      {
        projectId: req.principal!.projectId,
        request: { ...request, channelMapping: channelMapping ?? {} },
        idempotencyKey: idempotencyKey(req.get('idempotency-key'), bodyKey),
        at: new Date(deps.now()),
      },
      { clientId: req.principal!.clientId, requestId: req.id },
    );
    await waitForProjection(deps.pool, deps.store, 'bindings', outcome.position);
    const body: z.output<typeof bindingCreatedSchema> = { binding: toBindingWire(outcome.binding) };
    res.status(201).set('Cache-Control', 'no-store').json(body);
  });

  router.get('/bindings', requireScope('devices:read'), async (req, res) => {
    parseQuery(noQuerySchema, req.query);
    const bindings = await listBindings(deps.pool, req.principal!.projectId);
    const body: z.output<typeof bindingListSchema> = { bindings: bindings.map(toBindingWire) };
    res.set('Cache-Control', 'no-store').json(body);
  });

  return router;
}

/** The OpenAPI operations of these routes (document.ts assembles them). */
export const bindingOperations: readonly OperationDeclaration[] = [
  [
    'post',
    '/v1/bindings',
    secured('devices:write', {
      operationId: 'createBinding',
      summary: 'Bind a device to an object of your application',
      parameters: [idempotencyKeyHeader('body')],
      requestBody: jsonBody('BindingRequest'),
      responses: {
        201: ok('BindingCreated', 'The binding (also on an idempotent replay).'),
        404: NO_SUCH_DEVICE,
        409: error('The idempotency key was used with a different body (`conflict`).'),
        422: error('Validation failure (`invalid_request`, with `reason` and `field`).'),
      },
    }),
  ],
  [
    'get',
    '/v1/bindings',
    secured('devices:read', {
      operationId: 'listBindings',
      summary: "The project's bindings, oldest first (not paginated)",
      responses: { 200: ok('BindingList', 'Every binding of the project.'), 400: INVALID_QUERY },
    }),
  ],
];
