import { createHash } from 'node:crypto';
import { Router } from 'express';
import { z } from 'zod';
import { CAPABILITIES, toCatalogueEntryWire } from '../../domain/catalogue/index.js';
import { requireScope } from '../auth/require-scope.js';
import { noQuerySchema, parseQuery } from '../validation.js';
import { ok, secured, INVALID_QUERY, type OperationDeclaration } from '../openapi/operation.js';

export const catalogueEntrySchema = z.object({
  key: z.string().meta({ description: 'Canonical capability key, exact and case-sensitive.' }),
  unit: z.string().meta({ description: 'The unit to render; "none" means dimensionless.' }),
  type: z.enum(['number', 'boolean', 'text']),
  writable: z.boolean(),
  safetyClass: z.enum(['S0', 'S1', 'S2', 'S3']),
  aggregation: z.enum(['gauge', 'counter_total', 'counter_daily', 'counter_session', 'discrete']),
  range: z.object({ min: z.number().optional(), max: z.number().optional() }).optional(),
  step: z.number().optional(),
  enum: z.array(z.string()).optional(),
  description: z.string(),
});

export const catalogueSchema = z.object({ capabilities: z.array(catalogueEntrySchema) });

const body: z.output<typeof catalogueSchema> = { capabilities: CAPABILITIES.map(toCatalogueEntryWire) };
// The catalogue only changes with a release, so its digest is a strong validator for the whole body.
const etag = `"${createHash('sha256').update(JSON.stringify(body)).digest('base64url').slice(0, 22)}"`;

/**
 * The catalogue changes on releases, not per request: clients may reuse it for an hour and then revalidate
 * with If-None-Match (304). private: the answer still depends on the caller holding catalog:read.
 */
const CATALOGUE_CACHE_CONTROL = 'private, max-age=3600';

/** GET /catalog/capabilities (mounted under /v1). */
export function catalogueRoutes(): Router {
  const router = Router();
  router.get('/catalog/capabilities', requireScope('catalog:read'), (req, res) => {
    parseQuery(noQuerySchema, req.query);
    res.set({ 'Cache-Control': CATALOGUE_CACHE_CONTROL, ETag: etag }).json(body);
  });
  return router;
}

/** The OpenAPI operations of these routes (document.ts assembles them). */
export const catalogueOperations: readonly OperationDeclaration[] = [
  [
    'get',
    '/v1/catalog/capabilities',
    secured('catalog:read', {
      operationId: 'getCapabilityCatalogue',
      summary: 'The capability catalogue',
      responses: {
        200: ok('Catalogue', 'Every catalogue entry.', {
          'Cache-Control': { schema: { type: 'string' }, description: '`private, max-age=3600`.' },
          ETag: {
            schema: { type: 'string' },
            description: 'Strong validator; send it back in If-None-Match.',
          },
        }),
        304: {
          description: 'Not modified since the ETag sent in If-None-Match.',
          headers: {
            'Cache-Control': { schema: { type: 'string' }, description: '`private, max-age=3600`.' },
            ETag: { schema: { type: 'string' }, description: 'The validator that matched.' },
          },
        },
        400: INVALID_QUERY,
      },
    }),
  ],
];
