import { Router } from 'express';
import { z } from 'zod';
import { requestCommand } from '../../control/commands.js';
import { COMMAND_MODES, COMMAND_STATUSES } from '../../domain/control/command-events.js';
import { TTL_SECONDS_MAX, TTL_SECONDS_MIN, type CommandRecord } from '../../domain/control/index.js';
import { NotFound } from '../../domain/errors.js';
import type { EventStore } from '../../eventstore/port.js';
import type { CommandMetrics } from '../../infra/metrics.js';
import type { Pool } from '../../infra/postgres/pool.js';
import { findCommand, listCommands, type CommandRow } from '../../projections/commands/queries.js';
import { findDevice } from '../../projections/devices/queries.js';
import { requireScope } from '../auth/require-scope.js';
import { idempotencyKey, idempotencyKeyHeader, idempotencyKeySchema } from '../idempotency-key.js';
import { commandCursors } from '../pagination/command-cursor.js';
import { noQuerySchema, parseBody, parseQuery, queryProblem } from '../validation.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, pageLimitSchema } from './devices.js';
import {
  gatedWrite,
  error,
  INVALID_QUERY,
  jsonBody,
  NO_SUCH_DEVICE,
  ok,
  pathParameter,
  queryParameters,
  secured,
  type OperationDeclaration,
} from '../openapi/operation.js';

/** 'missing' for an absent field, else the given reason: the 422 says which it was. */
const absentOr = (reason: string) => (issue: { input: unknown }) =>
  issue.input === undefined ? 'missing' : reason;

const commandValue = z.union([z.boolean(), z.number(), z.string()], { error: absentOr('wrong_type') });

export const commandRequestSchema = z.strictObject({
  // A schema-wide error would also answer for the length checks: each check names its own reason.
  capabilityKey: z
    .string({ error: absentOr('wrong_type') })
    .min(1, { error: 'empty' })
    .max(128, { error: 'too_long' }),
  value: commandValue.meta({
    description: 'Typed as the capability declares; nothing is coerced (a boolean takes only true or false).',
  }),
  mode: z
    .enum(COMMAND_MODES, { error: absentOr('invalid_mode') })
    .meta({ description: 'desired: a reconciled setpoint; imperative: delivered once, never replayed.' }),
  ttlSeconds: z
    .number({ error: absentOr('wrong_type') })
    .int({ error: 'not_an_integer' })
    .min(TTL_SECONDS_MIN, { error: 'out_of_range' })
    .max(TTL_SECONDS_MAX, { error: 'out_of_range' })
    .meta({ description: `Whole seconds, ${TTL_SECONDS_MIN} to ${TTL_SECONDS_MAX}; never clamped.` }),
  confirm: z.boolean({ error: 'wrong_type' }).optional().meta({ description: 'Must be true for S2 and S3.' }),
  challengeId: z
    .string({ error: 'wrong_type' })
    .min(1, { error: 'empty' })
    .max(64, { error: 'too_long' })
    .optional()
    .meta({
      description:
        'S3 second step only: the challengeId of the 403 challenge_required answer (422 on an S1/S2 command).',
    }),
  idempotencyKey: idempotencyKeySchema.optional(),
});

export const commandSchema = z.object({
  commandId: z.string(),
  deviceId: z.string(),
  capabilityKey: z.string(),
  value: commandValue,
  mode: z.enum(COMMAND_MODES),
  ttlSeconds: z.number().int(),
  status: z.enum(COMMAND_STATUSES).meta({ description: 'docs/commands.md: queued, sent, then one outcome.' }),
  acceptedAt: z.iso.datetime(),
  expiresAt: z.iso.datetime().meta({ description: 'acceptedAt + ttlSeconds, by the server clock.' }),
  updatedAt: z.iso.datetime().meta({ description: 'The last change of status or send.' }),
  attempts: z.number().int().meta({ description: 'How many times it was sent to the agent so far.' }),
  outcome: z
    .object({
      reason: z.string().optional(),
      detail: z.string().optional(),
      supersededBy: z.string().optional(),
    })
    .optional()
    .meta({
      description:
        'How a final command ended: a failure or cancel reason, or the command that superseded it.',
    }),
});

export const commandAnswerSchema = z.object({ command: commandSchema });

const commandListQuerySchema = z.strictObject({
  status: z.enum(COMMAND_STATUSES, { error: 'unknown_status' }).optional(),
  from: z.iso
    .datetime({ offset: true, error: 'invalid_timestamp' })
    .optional()
    .meta({ description: 'Accepted at or after this instant.' }),
  to: z.iso
    .datetime({ offset: true, error: 'invalid_timestamp' })
    .optional()
    .meta({ description: 'Accepted before this instant.' }),
  cursor: z.string().min(1).max(512).optional().meta({ description: 'The nextCursor of the previous page.' }),
  limit: pageLimitSchema.meta({
    description: `Page size, default ${DEFAULT_PAGE_SIZE}, at most ${MAX_PAGE_SIZE}.`,
  }),
});

export const commandListSchema = z.object({
  commands: z.array(commandSchema),
  nextCursor: z.string().optional().meta({ description: 'Present while more commands follow.' }),
});

type CommandWire = z.output<typeof commandSchema>;

/** The write side's record (the 201) and the read model's row answer in one shape. */
function fromRecord(c: CommandRecord & { deviceId: string }): CommandWire {
  const outcome = c.outcome && {
    ...(c.outcome.reason !== undefined || c.outcome.cancelReason !== undefined
      ? { reason: c.outcome.reason ?? c.outcome.cancelReason }
      : {}),
    ...(c.outcome.detail === undefined ? {} : { detail: c.outcome.detail }),
    ...(c.outcome.supersededBy === undefined ? {} : { supersededBy: c.outcome.supersededBy }),
  };
  return {
    commandId: c.commandId,
    deviceId: c.deviceId,
    capabilityKey: c.capability,
    value: c.value,
    mode: c.mode,
    ttlSeconds: c.ttlSeconds,
    status: c.status,
    acceptedAt: c.acceptedAt,
    expiresAt: c.expiresAt,
    updatedAt: c.outcome?.at ?? c.lastAttempt?.sentAt ?? c.acceptedAt,
    attempts: c.lastAttempt?.attempt ?? 0,
    ...(outcome ? { outcome } : {}),
  };
}

function fromRow(c: CommandRow): CommandWire {
  return {
    commandId: c.commandId,
    deviceId: c.deviceId,
    capabilityKey: c.capability,
    value: c.value,
    mode: c.mode as CommandWire['mode'],
    ttlSeconds: c.ttlSeconds,
    status: c.status as CommandWire['status'],
    acceptedAt: c.acceptedAt.toISOString(),
    expiresAt: c.expiresAt.toISOString(),
    updatedAt: c.updatedAt.toISOString(),
    attempts: c.attempts,
    ...(c.outcome ? { outcome: c.outcome } : {}),
  };
}

/**
 * POST /devices/{publicId}/commands (behind the safety gate), GET /commands/{commandId} and
 * GET /devices/{publicId}/commands. The POST never answers 404 for a device: missing and foreign devices are
 * refusals (403, device_not_addressable), per the spec.
 */
export function commandRoutes(deps: {
  pool: Pool;
  store: EventStore;
  cursorKey: (name: string) => Promise<Buffer>;
  now: () => number;
  metrics: CommandMetrics;
}): Router {
  const router = Router();
  const cursors = commandCursors(deps.cursorKey);

  router.post('/devices/:publicId/commands', requireScope('commands:write'), async (req, res) => {
    parseQuery(noQuerySchema, req.query);
    const principal = req.principal!;
    const { idempotencyKey: bodyKey, capabilityKey, ...body } = parseBody(commandRequestSchema, req.body);
    const key = idempotencyKey(req.get('idempotency-key'), bodyKey);
    const decided = requestCommand(
      deps.store,
      {
        projectId: principal.projectId,
        clientId: principal.clientId,
        // An S3 capability needs commands:high_risk too: the command decider checks it first.
        scopes: principal.scopes,
        deviceId: String(req.params.publicId),
        capabilityKey,
        ...body,
        ...(key === undefined ? {} : { idempotencyKey: key }),
        now: new Date(deps.now()),
      },
      { clientId: principal.clientId, requestId: req.id },
    );
    const answer = await deps.metrics.decided(decided);
    res
      .status(201)
      .set('Cache-Control', 'no-store')
      .json({ command: fromRecord(answer.command) } satisfies z.output<typeof commandAnswerSchema>);
  });

  router.get('/commands/:commandId', requireScope('commands:read'), async (req, res) => {
    parseQuery(noQuerySchema, req.query);
    const command = await findCommand(deps.pool, req.principal!.projectId, String(req.params.commandId));
    if (!command) throw new NotFound('command');
    res
      .set('Cache-Control', 'no-store')
      .json({ command: fromRow(command) } satisfies z.output<typeof commandAnswerSchema>);
  });

  router.get('/devices/:publicId/commands', requireScope('commands:read'), async (req, res) => {
    const projectId = req.principal!.projectId;
    const query = parseQuery(commandListQuerySchema, req.query);
    // A window that ends before it starts is a mistake, not an empty page (as the telemetry window).
    if (query.from && query.to && Date.parse(query.from) > Date.parse(query.to)) {
      throw queryProblem('from_after_to', 'from');
    }
    const device = await findDevice(deps.pool, projectId, String(req.params.publicId));
    if (!device) throw new NotFound('device');
    const filter = {
      deviceId: device.deviceId,
      status: query.status,
      from: query.from === undefined ? undefined : new Date(query.from),
      to: query.to === undefined ? undefined : new Date(query.to),
    };
    const after = query.cursor === undefined ? 0n : await cursors.open(projectId, filter, query.cursor);
    const limit = Math.min(query.limit ?? DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE);
    const page = await listCommands(deps.pool, projectId, device.deviceId, filter, { after, limit });
    const body: z.output<typeof commandListSchema> = { commands: page.commands.map(fromRow) };
    if (page.next !== undefined) body.nextCursor = await cursors.seal(projectId, filter, page.next);
    res.set('Cache-Control', 'no-store').json(body);
  });

  return router;
}

/** The OpenAPI operations of these routes (document.ts assembles them). */
export const commandOperations: readonly OperationDeclaration[] = [
  [
    'post',
    '/v1/devices/:publicId/commands',
    gatedWrite(
      'commands:write',
      {
        operationId: 'sendCommand',
        summary: 'Send a command to a writable capability, behind the safety gate',
        description:
          'Answered 201 once validated, recorded and queued (not proof that the hardware acted). Refusals are 403 ' +
          'with reasons[] (closed list: docs/commands.md); S3 needs commands:high_risk and a two-step challenge.',
        parameters: [
          pathParameter('publicId'),
          idempotencyKeyHeader('content (device, capability, value, mode, ttlSeconds)'),
        ],
        requestBody: jsonBody('CommandRequest'),
        responses: {
          201: ok('CommandAnswer', 'Accepted and queued (also on an idempotent replay: the same commandId).'),
          404: error(
            'A malformed device id, one no device can have (with a space, or far too long): `not_found`. A ' +
              'well-formed id of a missing or foreign device is a 403 refusal instead.',
          ),
          409: error(
            'The idempotency key was used with other content (`conflict`, `idempotency_key_reused`).',
          ),
          422: error(
            'A body that does not fit (`invalid_request`; a challengeId on an S1/S2 command is ' +
              '`challenge_not_applicable`), or a value that fails the capability (`invalid_value`) when no policy reason stands.',
          ),
        },
      },
      'Without reasons: the token lacks commands:write, or commands:high_risk for an S3 capability. With ' +
        'reasons[]: a safety refusal; a missing or foreign device is `device_not_addressable` (never 404). A first ' +
        'S3 request that passes everything else answers `["challenge_required"]` and `challenge {challengeId, expiresAt}`; ' +
        'the answer must repeat that exact command (`challenge_mismatch`) before any grant, profile or lifecycle ' +
        'change of the device (`challenge_voided`).',
    ),
  ],
  [
    'get',
    '/v1/commands/:commandId',
    secured('commands:read', {
      operationId: 'getCommand',
      summary: 'One command and its current status',
      parameters: [pathParameter('commandId')],
      responses: {
        200: ok('CommandAnswer', 'The command.'),
        400: INVALID_QUERY,
        404: error('No such command in your project (`not_found`); a foreign command answers the same.'),
      },
    }),
  ],
  [
    'get',
    '/v1/devices/:publicId/commands',
    secured('commands:read', {
      operationId: 'listDeviceCommands',
      summary: "A page of a device's commands, in acceptance order",
      description: 'Filters combine. Follow nextCursor, with the same filters, until it is absent.',
      parameters: [pathParameter('publicId'), ...queryParameters(commandListQuerySchema)],
      responses: {
        200: ok('CommandList', 'A page of commands.'),
        400: error('Bad query (`invalid_query`, with `reason` and `parameter`), `from_after_to` included.'),
        404: NO_SUCH_DEVICE,
      },
    }),
  ],
];
