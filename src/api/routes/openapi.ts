import { Router } from 'express';
import { openApiDocument } from '../openapi/document.js';

/**
 * GET /openapi.json, without authentication: the interface is public, the data behind it is not. Its
 * server and token URL are this deployment's, `publicBaseUrl`.
 */
export function openApiRoutes(publicBaseUrl: string): Router {
  const router = Router();
  const document = openApiDocument(publicBaseUrl);
  router.get('/openapi.json', (_req, res) => {
    res.set('Cache-Control', 'public, max-age=3600').json(document);
  });
  return router;
}
