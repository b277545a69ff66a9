import { Router } from 'express';
import { z } from 'zod';
import type { Pool } from '../../infra/postgres/pool.js';
import { listSites } from '../../projections/sites/queries.js';
import { requireScope } from '../auth/require-scope.js';
import { noQuerySchema, parseQuery } from '../validation.js';
import { ok, secured, INVALID_QUERY, type OperationDeclaration } from '../openapi/operation.js';

export const siteSchema = z.object({
  siteId: z.string(),
  name: z.string(),
  timezone: z.string().meta({
    description: "IANA zone; daily buckets and the *_today counters reset at this zone's midnight.",
  }),
});

export const siteListSchema = z.object({ sites: z.array(siteSchema) });

/** GET /sites (mounted under /v1): every site of the caller's project, oldest first, not paginated. */
export function siteRoutes(deps: { pool: Pool }): Router {
  const router = Router();
  router.get('/sites', requireScope('devices:read'), async (req, res) => {
    parseQuery(noQuerySchema, req.query);
    const sites = await listSites(deps.pool, req.principal!.projectId);
    const body: z.output<typeof siteListSchema> = {
      sites: sites.map((s) => ({ siteId: s.siteId, name: s.name, timezone: s.timezone })),
    };
    res.set('Cache-Control', 'no-store').json(body);
  });
  return router;
}

/** The OpenAPI operations of these routes (document.ts assembles them). */
export const siteOperations: readonly OperationDeclaration[] = [
  [
    'get',
    '/v1/sites',
    secured('devices:read', {
      operationId: 'listSites',
      summary: "The project's sites, oldest first (not paginated)",
      responses: { 200: ok('SiteList', 'Every site of the project.'), 400: INVALID_QUERY },
    }),
  ],
];
