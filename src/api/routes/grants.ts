import { Router } from 'express';
import { z } from 'zod';
import { setCapabilityGrant } from '../../control/grants.js';
import { findCapability } from '../../domain/catalogue/index.js';
import { NotFound } from '../../domain/errors.js';
import type { Actor } from '../../domain/events/actor.js';
import type { EventStore } from '../../eventstore/port.js';
import type { Pool } from '../../infra/postgres/pool.js';
import { waitForProjection } from '../../projections/catch-up.js';
import { findDevice } from '../../projections/devices/queries.js';
import { grantsOfDevice } from '../../projections/grants/queries.js';
import { missingScope, unauthenticated } from '../http-errors.js';
import { requireScope } from '../auth/require-scope.js';
import { noQuerySchema, parseBody, parseQuery } from '../validation.js';
import {
  gatedWrite,
  error,
  INVALID_QUERY,
  jsonBody,
  NO_SUCH_DEVICE,
  ok,
  pathParameter,
  secured,
  type OperationDeclaration,
} from '../openapi/operation.js';

export const grantRequestSchema = z.strictObject({
  capabilityKey: z.string().min(1).max(128).meta({ description: 'A writable capability of the device.' }),
  write: z
    .boolean()
    .meta({ description: 'true enables write (grants:admin); false revokes it (grants:revoke suffices).' }),
});

const actorSchema = z
  .object({ kind: z.enum(['client', 'operator', 'system']), clientId: z.string().optional() })
  .meta({ description: 'client (with its clientId) through the API, operator through the devcloud CLI.' });

export const grantSchema = z.object({
  capabilityKey: z.string(),
  safetyClass: z.enum(['S1', 'S2', 'S3']),
  write: z.boolean().meta({ description: 'True only while an unrevoked grant exists for the pair.' }),
  state: z.enum(['none', 'denied', 'granted', 'revoked']).meta({
    description: 'denied: the explicit denial recorded at adoption; none: no record at all (refused alike).',
  }),
  changedBy: actorSchema
    .nullable()
    .meta({ description: 'Who changed it last; null for the adoption default.' }),
  changedAt: z.iso.datetime().nullable(),
});

export const grantAnswerSchema = z.object({ grant: grantSchema });
export const grantListSchema = z.object({ grants: z.array(grantSchema) });

type GrantWire = z.output<typeof grantSchema>;

const actorWire = (actor: Actor | null | undefined) =>
  actor
    ? actor.kind === 'client'
      ? { kind: actor.kind, clientId: actor.clientId }
      : { kind: actor.kind }
    : null;

const classOf = (key: string) => findCapability(key)!.safetyClass as GrantWire['safetyClass'];

/**
 * PUT and GET /devices/{publicId}/capability-grants. Enabling needs grants:admin, revoking only
 * grants:revoke; a missing or foreign device is 404 on both.
 */
export function grantRoutes(deps: { pool: Pool; store: EventStore; now: () => number }): Router {
  const router = Router();

  router.put('/devices/:publicId/capability-grants', async (req, res) => {
    const principal = req.principal;
    if (!principal) throw unauthenticated();
    parseQuery(noQuerySchema, req.query);
    if (!principal.scopes.has('grants:revoke')) throw missingScope();
    const body = parseBody(grantRequestSchema, req.body);
    if (body.write && !principal.scopes.has('grants:admin')) throw missingScope();
    const outcome = await setCapabilityGrant(
      deps.store,
      {
        projectId: principal.projectId,
        clientId: principal.clientId,
        deviceId: String(req.params.publicId),
        capabilityKey: body.capabilityKey,
        write: body.write,
        now: new Date(deps.now()),
      },
      { clientId: principal.clientId, requestId: req.id },
    );
    if (outcome.position) await waitForProjection(deps.pool, deps.store, 'grants', outcome.position);
    const grant: GrantWire = {
      capabilityKey: outcome.capabilityKey,
      safetyClass: classOf(outcome.capabilityKey),
      write: outcome.state === 'granted',
      state: outcome.state,
      changedBy: actorWire(outcome.changedBy),
      changedAt: outcome.changedAt ?? null,
    };
    res.set('Cache-Control', 'no-store').json({ grant } satisfies z.output<typeof grantAnswerSchema>);
  });

  router.get('/devices/:publicId/capability-grants', requireScope('devices:read'), async (req, res) => {
    parseQuery(noQuerySchema, req.query);
    const projectId = req.principal!.projectId;
    const device = await findDevice(deps.pool, projectId, String(req.params.publicId));
    if (!device) throw new NotFound('device');
    const recorded = new Map(
      (await grantsOfDevice(deps.pool, projectId, device.deviceId)).map((g) => [g.capability, g]),
    );
    const grants: GrantWire[] = device.capabilities
      .filter((key) => findCapability(key)?.writable === true)
      .map((key) => {
        const row = recorded.get(key);
        return {
          capabilityKey: key,
          safetyClass: classOf(key),
          write: row?.state === 'granted',
          state: row?.state ?? 'none',
          changedBy: actorWire(row?.changedBy),
          changedAt: row?.changedAt.toISOString() ?? null,
        };
      });
    res.set('Cache-Control', 'no-store').json({ grants } satisfies z.output<typeof grantListSchema>);
  });

  return router;
}

/** The OpenAPI operations of these routes (document.ts assembles them). */
export const grantOperations: readonly OperationDeclaration[] = [
  [
    'put',
    '/v1/devices/:publicId/capability-grants',
    gatedWrite(
      'grants:revoke',
      {
        operationId: 'setCapabilityGrant',
        summary: 'Enable (write true, grants:admin) or revoke (write false, grants:revoke) one write grant',
        description:
          'S2 and S3 need a verified profile (409 `profile_not_verified` otherwise, nothing recorded); S1 may be ' +
          'enabled on a draft profile. A revoke cancels the pending commands of the pair. Repeating a change records nothing.',
        parameters: [pathParameter('publicId')],
        requestBody: jsonBody('GrantRequest'),
        responses: {
          200: ok('GrantAnswer', 'The grant as it now stands.'),
          404: NO_SUCH_DEVICE,
          409: error(
            '`profile_not_verified` (S2/S3 on a draft profile) or `device_lifecycle` (revoked or retired device).',
          ),
          422: error(
            'Unknown capability, read-only capability, or one the device does not have (`invalid_value`).',
          ),
        },
      },
      'The token lacks grants:revoke, or grants:admin to enable (`forbidden`, no reasons).',
    ),
  ],
  [
    'get',
    '/v1/devices/:publicId/capability-grants',
    secured('devices:read', {
      operationId: 'listCapabilityGrants',
      summary: 'Every writable capability of the device with its grant state, who changed it last and when',
      parameters: [pathParameter('publicId')],
      responses: {
        200: ok('GrantList', 'One entry per writable capability.'),
        400: INVALID_QUERY,
        404: NO_SUCH_DEVICE,
      },
    }),
  ],
];
