import { readFileSync } from 'node:fs';
import {
  CHAINED_EVENT_TYPES,
  ChainMembership,
  deviceWithoutProject,
} from '../../domain/audit/chained-events.js';
import { eventDigest, genesisLink, nextLink } from '../../domain/audit/chain.js';
import type { RecordedEvent } from '../../eventstore/port.js';
import { sha256Hex } from '../../infra/sha256.js';
import { isoInstant } from '../../infra/iso-time.js';
import type { PoolClient } from '../../infra/postgres/pool.js';
import type { Projector } from '../projector.js';

const schemaSql = readFileSync(new URL('./schema.sql', import.meta.url), 'utf8');

const HEADS = `SELECT project_id, sequence, link FROM audit_chain_heads WHERE project_id = ANY ($1::text[])`;

const DEVICE_PROJECTS = `SELECT device_id, project_id FROM audit_chain_devices WHERE device_id = ANY ($1::text[])`;

const INSERT_DEVICES = `
  INSERT INTO audit_chain_devices (device_id, project_id)
  SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT (device_id) DO NOTHING`;

// A batch is applied with its checkpoint in one transaction, so a link is never written twice: a replayed
// batch after a crash finds nothing of itself. ON CONFLICT would hide a second writer; there is none (the
// projector runs under the election), so a conflict fails the batch loudly instead.
const INSERT_LINKS = `
  INSERT INTO audit_chain_links (position, project_id, sequence, digest, link, recorded_at)
  SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::timestamptz[])`;

const UPSERT_HEADS = `
  INSERT INTO audit_chain_heads (project_id, sequence, link, position)
  SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[])
  ON CONFLICT (project_id) DO UPDATE
     SET sequence = excluded.sequence, link = excluded.link, position = excluded.position`;

export const AUDIT_CHAIN_PROJECTOR = 'audit-chain';

/**
 * Chains every event of the control history, per project, as it reaches the global order (docs/audit.md,
 * "Where the chain is computed"). The data chained is the event's JSON text as the store keeps it: what the
 * service appended, `JSON.stringify` of the data, which a read gives back byte for byte.
 */
export function auditChainProjector(): Projector {
  return {
    name: AUDIT_CHAIN_PROJECTOR,
    version: 1,
    eventTypes: CHAINED_EVENT_TYPES,
    tables: ['audit_chain_links', 'audit_chain_heads', 'audit_chain_devices'],
    schemaSql,
    rebuildRefused:
      'is the record of what the events were when they were chained; a replay from ' +
      "today's events would overwrite that evidence (docs/audit.md)",
    // On PostgreSQL the data is chained as the store keeps it (events from before the store kept json text
    // are held in jsonb's spelling, not JSON.stringify's); KurrentDB hands back parsed data only.
    dataAsStored: true,
    async apply(events, db) {
      if (events.length === 0) return;
      const membership = new ChainMembership(await loadDeviceProjects(db, events));
      const chained = events.map((event) => ({
        event,
        projectId: membership.projectOf(event.type, event.data),
      }));
      const heads = await loadHeads(
        db,
        chained.map((c) => c.projectId),
      );
      const links: Link[] = [];
      for (const { event, projectId } of chained) {
        // Neither a project nor a registered device named: the event belongs to no project's chain.
        if (projectId === undefined) continue;
        const head = heads.get(projectId) ?? {
          sequence: 0,
          link: genesisLink(sha256Hex, projectId),
          position: '',
        };
        const digest = eventDigest(sha256Hex, chainedFields(event));
        const link = nextLink(sha256Hex, head.link, digest);
        const next = { sequence: head.sequence + 1, link, position: event.position };
        heads.set(projectId, next);
        links.push({ ...next, projectId, digest, recordedAt: isoInstant(event.recordedAt.getTime()) });
      }
      const { registered } = membership;
      if (registered.size > 0)
        await db.query(INSERT_DEVICES, [[...registered.keys()], [...registered.values()]]);
      if (links.length === 0) return;
      await db.query(INSERT_LINKS, [
        links.map((l) => l.position),
        links.map((l) => l.projectId),
        links.map((l) => l.sequence),
        links.map((l) => l.digest),
        links.map((l) => l.link),
        links.map((l) => l.recordedAt),
      ]);
      const moved = [...new Set(links.map((l) => l.projectId))];
      await db.query(UPSERT_HEADS, [
        moved,
        moved.map((p) => heads.get(p)!.sequence),
        moved.map((p) => heads.get(p)!.link),
        moved.map((p) => heads.get(p)!.position),
      ]);
    },
  };
}

/** What of a recorded event the chain commits to (chain.ts). */
export function chainedFields(event: RecordedEvent) {
  return {
    position: event.position,
    type: event.type,
    streamName: event.streamName,
    recordedAt: isoInstant(event.recordedAt.getTime()),
    data: event.dataText ?? JSON.stringify(event.data),
  };
}

interface Head {
  readonly sequence: number;
  readonly link: string;
  readonly position: string;
}

interface Link extends Head {
  readonly projectId: string;
  readonly digest: string;
  readonly recordedAt: string;
}

async function loadHeads(
  db: PoolClient,
  projectIds: readonly (string | undefined)[],
): Promise<Map<string, Head>> {
  const projects = [...new Set(projectIds.filter((p) => p !== undefined))];
  if (projects.length === 0) return new Map();
  const { rows } = await db.query<{ project_id: string; sequence: string; link: string }>(HEADS, [projects]);
  return new Map(
    rows.map((r) => [r.project_id, { sequence: Number(r.sequence), link: r.link, position: '' }]),
  );
}

/** The projects of the devices that events of the batch name without naming a project. */
async function loadDeviceProjects(
  db: PoolClient,
  events: readonly RecordedEvent[],
): Promise<[string, string][]> {
  const named = new Set(events.map((e) => deviceWithoutProject(e.data)).filter((d) => d !== undefined));
  if (named.size === 0) return [];
  const { rows } = await db.query<{ device_id: string; project_id: string }>(DEVICE_PROJECTS, [[...named]]);
  return rows.map((r) => [r.device_id, r.project_id]);
}
