import { readFileSync } from 'node:fs';
import { FINAL_STATUS_AFTER, type CommandEvent } from '../../domain/control/command-events.js';
import type { PoolClient } from '../../infra/postgres/pool.js';
import type { Projector } from '../projector.js';

const schemaSql = readFileSync(new URL('./schema.sql', import.meta.url), 'utf8');
const queryIndexSql = readFileSync(new URL('./query-indexes.sql', import.meta.url), 'utf8');

/** Numbered like devices (see devices/projector.ts): serialised by the checkpoint lock, gap-free on replay. */
const INSERT_ACCEPTED = `
  INSERT INTO commands (seq, command_id, project_id, device_id, capability, value, mode, ttl_seconds, status,
                        accepted_at, expires_at, updated_at, attempts)
  SELECT (SELECT coalesce(max(seq), 0) FROM commands) + row_number() OVER (ORDER BY n.ord),
         n.command_id, n.project_id, n.device_id, n.capability, n.value, n.mode, n.ttl_seconds, 'queued',
         n.accepted_at, n.expires_at, n.accepted_at, 0
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::text[], $7::int[],
                $8::timestamptz[], $9::timestamptz[])
         WITH ORDINALITY AS n(command_id, project_id, device_id, capability, value, mode, ttl_seconds,
                              accepted_at, expires_at, ord)
   WHERE NOT EXISTS (SELECT 1 FROM commands c WHERE c.command_id = n.command_id)
   ORDER BY n.ord`;

/** A final status is never left again; sends only move a pending command to sent. */
const UPDATE_PROGRESS = `
  UPDATE commands c
     SET attempts = greatest(c.attempts, n.attempts),
         status = coalesce(n.final_status, CASE WHEN n.attempts > 0 THEN 'sent' ELSE c.status END),
         outcome = coalesce(n.outcome, c.outcome),
         updated_at = n.updated_at
    FROM unnest($1::text[], $2::int[], $3::text[], $4::jsonb[], $5::timestamptz[])
         AS n(command_id, attempts, final_status, outcome, updated_at)
   WHERE c.command_id = n.command_id AND c.status IN ('queued', 'sent')`;

interface Progress {
  attempts: number;
  finalStatus: string | null;
  outcome: string | null;
  updatedAt: string;
}

export function commandsProjector(): Projector {
  return {
    name: 'commands',
    version: 1,
    eventTypes: ['CommandAccepted', 'CommandSent', ...Object.keys(FINAL_STATUS_AFTER)],
    tables: ['commands'],
    schemaSql,
    queryIndexSql,
    async apply(events, db) {
      const accepted: Extract<CommandEvent, { type: 'CommandAccepted' }>['data'][] = [];
      const progress = new Map<string, Progress>();
      for (const event of events) {
        const e = { type: event.type, data: event.data } as CommandEvent;
        if (e.type === 'CommandAccepted') {
          accepted.push(e.data);
          continue;
        }
        if (e.type === 'CommandChallengeIssued') continue;
        const p = progress.get(e.data.commandId) ?? {
          attempts: 0,
          finalStatus: null,
          outcome: null,
          updatedAt: '',
        };
        if (e.type === 'CommandSent') {
          if (p.finalStatus === null) p.updatedAt = e.data.sentAt;
          p.attempts = Math.max(p.attempts, e.data.attempt);
        } else if (e.type !== 'CommandAckIgnored' && p.finalStatus === null) {
          // The first outcome stands, as in the write side's fold.
          p.finalStatus = FINAL_STATUS_AFTER[e.type as keyof typeof FINAL_STATUS_AFTER];
          p.outcome = JSON.stringify(outcomeOf(e));
          p.updatedAt = e.data.at;
        } else continue;
        progress.set(e.data.commandId, p);
      }
      if (accepted.length > 0) await insertAccepted(accepted, db);
      if (progress.size > 0) {
        const entries = [...progress.entries()];
        await db.query(UPDATE_PROGRESS, [
          entries.map(([id]) => id),
          entries.map(([, p]) => p.attempts),
          entries.map(([, p]) => p.finalStatus),
          entries.map(([, p]) => p.outcome),
          entries.map(([, p]) => p.updatedAt),
        ]);
      }
    },
  };
}

function outcomeOf(e: CommandEvent): Record<string, string> {
  switch (e.type) {
    case 'CommandFailed':
      return { reason: e.data.reason, ...(e.data.detail === undefined ? {} : { detail: e.data.detail }) };
    case 'CommandSucceeded':
      return e.data.detail === undefined ? {} : { detail: e.data.detail };
    case 'CommandSuperseded':
      return { supersededBy: e.data.supersededBy };
    case 'CommandCancelled':
      return { reason: e.data.reason };
    default:
      return {};
  }
}

async function insertAccepted(
  data: Extract<CommandEvent, { type: 'CommandAccepted' }>['data'][],
  db: PoolClient,
): Promise<void> {
  await db.query(INSERT_ACCEPTED, [
    data.map((d) => d.commandId),
    data.map((d) => d.projectId),
    data.map((d) => d.deviceId),
    data.map((d) => d.capability),
    data.map((d) => JSON.stringify(d.value)),
    data.map((d) => d.mode),
    data.map((d) => d.ttlSeconds),
    data.map((d) => d.acceptedAt),
    data.map((d) => d.expiresAt),
  ]);
}
