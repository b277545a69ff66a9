import { z } from 'zod';

/**
 * Bodies of routes that do not validate with zod (the token endpoint reads its form field by field, per
 * RFC 6749; /health reports its checks). They are described here from the spec and from what those routes
 * send, so the document covers every route; tests/api/openapi.test.ts holds them to the real answers.
 */
export const tokenRequestSchema = z.object({
  grant_type: z.literal('client_credentials'),
  client_id: z
    .string()
    .optional()
    .meta({ description: 'Omitted when the client authenticates with HTTP Basic.' }),
  client_secret: z
    .string()
    .optional()
    .meta({ description: 'Omitted when the client authenticates with HTTP Basic.' }),
  scope: z
    .string()
    .optional()
    .meta({ description: "Space-separated scopes; omitted means all of the client's scopes." }),
});

export const tokenResponseSchema = z.object({
  access_token: z.string(),
  token_type: z.literal('Bearer'),
  expires_in: z.literal(3600),
  scope: z.string().meta({ description: 'Space-separated scopes the token carries.' }),
});

export const oauthErrorSchema = z.object({
  error: z.enum(['invalid_request', 'invalid_client', 'unsupported_grant_type', 'invalid_scope']),
  error_description: z.string().optional(),
});

export const healthSchema = z.looseObject({
  status: z.enum(['ok', 'degraded', 'unavailable']).meta({
    description:
      'degraded (HTTP 200): a projector is further behind than PROJECTION_LAG_DEGRADED_SECONDS; unavailable (503): the database or the event store does not answer.',
  }),
  checks: z.record(z.string(), z.unknown()).meta({
    description:
      'database, eventStore, and projections: per projector status ok|behind, lagSeconds, lagEvents, measuredAt.',
  }),
});

/** Every error we produce: `error`, plus `reasons` on policy refusals and a hint where one helps. */
export const errorSchema = z.looseObject({
  error: z.string(),
  reasons: z.array(z.string()).optional(),
  reason: z.string().optional().meta({ description: 'Machine-readable detail code.' }),
  field: z.string().optional().meta({ description: 'The body field (or header) at fault, on 422.' }),
  parameter: z.string().optional().meta({ description: 'The query parameter at fault, on 400.' }),
});
