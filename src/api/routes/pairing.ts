import { Router, type Request } from 'express';
import { z } from 'zod';
import { NotFound } from '../../domain/errors.js';
import {
  CANDIDATE_STATES,
  CLOSE_REASONS,
  IEEE_ADDR_PATTERN,
  PAIRING_WINDOW_SECONDS,
  WINDOW_STATES,
  canonicalIeeeAddr,
} from '../../domain/pairing/index.js';
import type { EventStore } from '../../eventstore/port.js';
import type { Pool } from '../../infra/postgres/pool.js';
import { waitForProjection } from '../../projections/catch-up.js';
import { findDevice, type DeviceRecord } from '../../projections/devices/queries.js';
import {
  findCandidate,
  findPairingSession,
  listCandidates,
  type PairingCandidateRow,
  type PairingSessionRow,
} from '../../projections/pairing/queries.js';
import { adoptCandidate, rejectCandidate } from '../../pairing/candidates.js';
import { closePairingWindow, openPairingWindow } from '../../pairing/windows.js';
import { requireScope } from '../auth/require-scope.js';
import { noQuerySchema, parseBody, parseQuery } from '../validation.js';
import { deviceSchema, toDeviceWire } from './devices.js';
import {
  error,
  header,
  jsonBody,
  ok,
  pathParameter,
  secured,
  type OperationDeclaration,
} from '../openapi/operation.js';

const { min, max } = PAIRING_WINDOW_SECONDS;

export const pairingOpenRequestSchema = z.strictObject({
  hubId: z.string().min(1).max(64).meta({ description: 'Public id of a hub of your project.' }),
  durationSeconds: z
    .number()
    .optional()
    .meta({
      description: `Window length, an integer from ${min} to ${max}; default ${PAIRING_WINDOW_SECONDS.default}. Out of range: 422 invalid_value, never clamped.`,
    }),
});

export const candidateRequestSchema = z.strictObject({
  ieeeAddr: z.string().regex(IEEE_ADDR_PATTERN, { error: 'invalid_ieee_addr' }).meta({
    description: 'The candidate, as listed by GET /v1/pairing/sessions/{id}: 0x and 16 hex digits.',
  }),
});

export const candidateSchema = z.object({
  ieeeAddr: z.string().meta({ description: "The radio's EUI-64. A candidate has no public id." }),
  manufacturer: z.string(),
  productModel: z.string(),
  capabilities: z.array(z.string()).meta({ description: 'Found when the agent interviewed the device.' }),
  state: z.enum(CANDIDATE_STATES),
  deviceId: z.string().nullable().meta({ description: 'The public id once adopted; null until then.' }),
  joinedAt: z.iso.datetime(),
});

export const pairingSessionSchema = z.object({
  sessionId: z.string(),
  hubId: z.string(),
  state: z.enum(WINDOW_STATES),
  openedAt: z.iso.datetime(),
  closesAt: z.iso.datetime().meta({ description: 'The deadline: the window closes itself then.' }),
  closedAt: z.iso.datetime().optional().meta({ description: 'Only once closed.' }),
  closeReason: z.enum(CLOSE_REASONS).optional().meta({ description: 'Only once closed.' }),
  candidates: z.array(candidateSchema).meta({ description: 'Every device that joined, in joining order.' }),
});

export const pairingSessionBodySchema = z.object({ session: pairingSessionSchema });
export const candidateBodySchema = z.object({ candidate: candidateSchema });
export const adoptionSchema = z.object({
  device: deviceSchema,
  write_blocked: z.array(z.string()).meta({
    description: 'Every writable capability of the new device; each holds an explicit write denial.',
  }),
});

type SessionWire = z.output<typeof pairingSessionSchema>;
type CandidateWire = z.output<typeof candidateSchema>;

const toCandidateWire = (c: PairingCandidateRow): CandidateWire => ({
  ieeeAddr: c.ieeeAddr,
  manufacturer: c.manufacturer,
  productModel: c.productModel,
  capabilities: [...c.capabilities],
  state: c.state,
  deviceId: c.deviceId,
  joinedAt: c.joinedAt.toISOString(),
});

/**
 * The device as just recorded, for the rare answer given before the devices read model caught up (its
 * created_at is then this moment rather than the recorded one). The radio address is not copied.
 */
function justRegistered(d: Awaited<ReturnType<typeof adoptCandidate>>['device'], at: Date): DeviceRecord {
  return {
    deviceId: d.deviceId,
    status: 'active',
    manufacturer: d.manufacturer,
    productModel: d.productModel,
    parentHubId: d.parentHubId,
    siteId: d.siteId,
    kind: d.kind,
    profile: d.profile,
    capabilities: d.capabilities,
    createdAt: at,
  };
}

function toSessionWire(s: PairingSessionRow, candidates: readonly PairingCandidateRow[]): SessionWire {
  return {
    sessionId: s.sessionId,
    hubId: s.hubId,
    state: s.state,
    openedAt: s.openedAt.toISOString(),
    closesAt: s.closesAt.toISOString(),
    ...(s.closedAt && { closedAt: s.closedAt.toISOString() }),
    ...(s.closeReason && { closeReason: s.closeReason }),
    candidates: candidates.map(toCandidateWire),
  };
}

/**
 * /pairing/sessions (mounted under /v1), all behind devices:write. Another project's hub or session answers
 * exactly like a missing one. Decisions fold the hub's pairing stream; answers are read back from the
 * pairing read model once it has caught up with the write, so a GET right after sees it.
 */
export function pairingRoutes(deps: { pool: Pool; store: EventStore; now: () => number }): Router {
  const router = Router();
  const now = () => new Date(deps.now());
  const writeScope = requireScope('devices:write');
  const metadataOf = (req: Request) => ({ clientId: req.principal!.clientId, requestId: req.id });
  const caughtUp = (position: string, ...projectors: string[]) =>
    Promise.all(projectors.map((p) => waitForProjection(deps.pool, deps.store, p, position)));

  async function sessionOf(req: Request): Promise<PairingSessionRow> {
    const session = await findPairingSession(deps.pool, req.principal!.projectId, String(req.params.id));
    if (!session) throw new NotFound('pairing session');
    return session;
  }

  async function answerSession(sessionId: string, projectId: string) {
    const session = await findPairingSession(deps.pool, projectId, sessionId);
    if (!session) throw new NotFound('pairing session');
    const body: z.output<typeof pairingSessionBodySchema> = {
      session: toSessionWire(session, await listCandidates(deps.pool, sessionId)),
    };
    return body;
  }

  router.post('/pairing/sessions', writeScope, async (req, res) => {
    parseQuery(noQuerySchema, req.query);
    const request = parseBody(pairingOpenRequestSchema, req.body);
    const projectId = req.principal!.projectId;
    const opened = await openPairingWindow(
      deps.store,
      { projectId, hubId: request.hubId, durationSeconds: request.durationSeconds, now: now() },
      metadataOf(req),
    );
    await caughtUp(opened.position, 'pairing');
    const body: z.output<typeof pairingSessionBodySchema> = {
      session: {
        sessionId: opened.sessionId,
        hubId: request.hubId,
        state: 'open',
        openedAt: opened.openedAt,
        closesAt: opened.closesAt,
        candidates: [],
      },
    };
    res.status(201).set('Cache-Control', 'no-store').json(body);
  });

  router.get('/pairing/sessions/:id', writeScope, async (req, res) => {
    parseQuery(noQuerySchema, req.query);
    res
      .set('Cache-Control', 'no-store')
      .json(await answerSession(String(req.params.id), req.principal!.projectId));
  });

  router.delete('/pairing/sessions/:id', writeScope, async (req, res) => {
    parseQuery(noQuerySchema, req.query);
    const session = await sessionOf(req);
    const { position } = await closePairingWindow(
      deps.store,
      { hubId: session.hubId, sessionId: session.sessionId, reason: 'closed_by_client', now: now() },
      metadataOf(req),
    );
    if (position) await caughtUp(position, 'pairing');
    res.set('Cache-Control', 'no-store').json(await answerSession(session.sessionId, session.projectId));
  });

  router.post('/pairing/sessions/:id/adopt', writeScope, async (req, res) => {
    parseQuery(noQuerySchema, req.query);
    const { ieeeAddr } = parseBody(candidateRequestSchema, req.body);
    const session = await sessionOf(req);
    const adopted = await adoptCandidate(
      deps.store,
      {
        hubId: session.hubId,
        sessionId: session.sessionId,
        ieeeAddr: canonicalIeeeAddr(ieeeAddr),
        now: now(),
      },
      metadataOf(req),
    );
    await caughtUp(adopted.position, 'pairing', 'devices');
    const record = await findDevice(deps.pool, session.projectId, adopted.device.deviceId);
    const body: z.output<typeof adoptionSchema> = {
      device: toDeviceWire(record ?? justRegistered(adopted.device, now())),
      write_blocked: [...adopted.writeBlocked],
    };
    res.status(201).set('Cache-Control', 'no-store').json(body);
  });

  router.post('/pairing/sessions/:id/reject', writeScope, async (req, res) => {
    parseQuery(noQuerySchema, req.query);
    const ieeeAddr = canonicalIeeeAddr(parseBody(candidateRequestSchema, req.body).ieeeAddr);
    const session = await sessionOf(req);
    const { position } = await rejectCandidate(
      deps.store,
      { hubId: session.hubId, sessionId: session.sessionId, ieeeAddr, now: now() },
      metadataOf(req),
    );
    await caughtUp(position, 'pairing');
    const candidate = await findCandidate(deps.pool, session.sessionId, ieeeAddr);
    if (!candidate) throw new NotFound('candidate');
    const body: z.output<typeof candidateBodySchema> = { candidate: toCandidateWire(candidate) };
    res.set('Cache-Control', 'no-store').json(body);
  });

  return router;
}

/** /v1/pairing/sessions: decisions the spec leaves open are in docs/pairing.md. */
export function pairingOperations(): OperationDeclaration[] {
  const sessionPath = pathParameter('id');
  const missingSession = {
    ...error('No such pairing session in your project (`not_found`); a foreign session answers the same.'),
    headers: { 'Cache-Control': header('NoStore') },
  };
  const candidateBody = jsonBody('CandidateRequest');
  return [
    [
      'post',
      '/v1/pairing/sessions',
      secured('devices:write', {
        operationId: 'openPairingSession',
        summary: 'Open a pairing window on a hub',
        description:
          "The hub's agent is told to permit joining until closesAt; the window then closes itself. One open " +
          "window per hub: a second open answers 409 with the open window's sessionId.",
        requestBody: jsonBody('PairingSessionRequest'),
        responses: {
          201: ok('PairingSessionBody', 'The open window.'),
          404: error('No such hub in your project (`not_found`); a foreign hub answers the same.'),
          409: error(
            'A window is open on the hub: `{"error":"conflict","reason":"pairing_window_open","sessionId":...}`; ' +
              'or the hub is not active (`hub_not_active`).',
          ),
          422: error('durationSeconds out of range (`invalid_value`), or a body that does not fit.'),
        },
      }),
    ],
    [
      'get',
      '/v1/pairing/sessions/:id',
      secured('devices:write', {
        operationId: 'getPairingSession',
        summary: 'The window and every candidate that joined it',
        parameters: [sessionPath],
        responses: { 200: ok('PairingSessionBody', 'The window and its candidates.'), 404: missingSession },
      }),
    ],
    [
      'delete',
      '/v1/pairing/sessions/:id',
      secured('devices:write', {
        operationId: 'closePairingSession',
        summary: 'Close the window now',
        description:
          'The agent is told to stop permitting joins. Closing a closed window answers it unchanged.',
        parameters: [sessionPath],
        responses: { 200: ok('PairingSessionBody', 'The closed window.'), 404: missingSession },
      }),
    ],
    [
      'post',
      '/v1/pairing/sessions/:id/adopt',
      secured('devices:write', {
        operationId: 'adoptPairingCandidate',
        summary: 'Adopt a candidate: it becomes a device with a public id',
        description:
          'The device is a child of the hub, in its site, status active, profile draft. Every writable ' +
          'capability starts with an explicit write denial and is listed in write_blocked.',
        parameters: [sessionPath],
        requestBody: candidateBody,
        responses: {
          201: ok('Adoption', 'The new device (as GET /v1/devices/{publicId}) and write_blocked.'),
          404: error('No such session, or no such candidate in it (`not_found`).'),
          409: error('The candidate is not pending (`candidate_not_pending`, with its `state`).'),
          422: error('ieeeAddr missing or malformed.'),
        },
      }),
    ],
    [
      'post',
      '/v1/pairing/sessions/:id/reject',
      secured('devices:write', {
        operationId: 'rejectPairingCandidate',
        summary: 'Refuse a candidate; the record is kept and the hub keeps refusing that device',
        parameters: [sessionPath],
        requestBody: candidateBody,
        responses: {
          200: ok('PairingCandidateBody', 'The refused candidate.'),
          404: error('No such session, or no such candidate in it (`not_found`).'),
          409: error('The candidate is not pending (`candidate_not_pending`, with its `state`).'),
          422: error('ieeeAddr missing or malformed.'),
        },
      }),
    ],
  ];
}
