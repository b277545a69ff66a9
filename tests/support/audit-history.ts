import { expect } from 'chai';
import { signCheckpoints } from '../../src/audit/checkpoints.js';
import { activeAuditSigner } from '../../src/audit/signing-keys.js';
import { CHAINED_EVENT_TYPES } from '../../src/domain/audit/chained-events.js';
import { encodePgPosition } from '../../src/eventstore/postgres/position.js';
import { auditChainProjector } from '../../src/projections/audit-chain/projector.js';
import { catchUpProjector } from '../../src/projections/catch-up.js';
import { controls } from './commands.js';
import { committedHead } from './database.js';
import type { RunningEventStore } from './event-store.js';
import { deviceOf, siteOf } from './registry.js';
import { projectWithClient } from './tenants.js';

/** A stored event as the tamperer sees it: its row's keys and what the chain commits to. */
export interface StoredEvent {
  readonly eventId: string;
  readonly position: string;
  readonly type: string;
  readonly transactionId: string;
  readonly globalPosition: string;
  readonly data: string;
  readonly recordedAt: Date;
}

/**
 * Real control history of two projects through the application services (a project and its client, a site,
 * devices, grants, a profile and a lifecycle move, commands), chained by the chain's projector and signed
 * twice by the checkpoint job's code: checkpoint #0 after the first part, #1 after the second.
 */
export async function signedControlHistory(running: RunningEventStore) {
  const { store, db } = running;
  const mine = await projectWithClient(store, db.pool, ['devices:read']);
  const theirs = await projectWithClient(store, db.pool, ['devices:read']);
  const site = await siteOf({ store }, mine.projectId);
  const d1 = await deviceOf({ store }, mine.projectId, site, {
    capabilities: ['binary.switch', 'actuator.relay'],
  });
  const d2 = await deviceOf({ store }, theirs.projectId, await siteOf({ store }, theirs.projectId), {
    capabilities: ['binary.switch'],
  });
  const ops = controls(store, { projectId: mine.projectId, clientId: mine.client.clientId });
  const other = controls(store, { projectId: theirs.projectId, clientId: theirs.client.clientId });
  await ops.verify(d1);
  await ops.grant(d1, 'binary.switch');
  await ops.grant(d1, 'actuator.relay');
  await ops.command(d1, { capability: 'binary.switch', value: true, mode: 'imperative' });
  await other.grant(d2, 'binary.switch');
  await chainAndSign(running);
  await ops.command(d1, { capability: 'actuator.relay', value: true, mode: 'desired' });
  await ops.grant(d1, 'binary.switch', false);
  await ops.lifecycle(d1, 'quarantined');
  await other.command(d2, { capability: 'binary.switch', value: false, mode: 'desired' });
  await chainAndSign(running);
  return { projectId: mine.projectId, otherProjectId: theirs.projectId, d1, d2 };
}

/** The chain's projector brought to the head, then every moved head signed. */
export async function chainAndSign(running: RunningEventStore): Promise<void> {
  const { store, db } = running;
  await catchUpProjector(db.pool, store, auditChainProjector(), 2000, await committedHead(db.pool));
  const signed = await signCheckpoints({
    store,
    pool: db.pool,
    signer: await activeAuditSigner(db.pool),
    now: new Date(),
  });
  expect(signed, 'checkpoints signed').to.not.be.empty;
}

/** The chained events of a project as stored, in global order. */
export async function storedEvents(running: RunningEventStore, projectId: string): Promise<StoredEvent[]> {
  const { rows } = await running.db.pool.query<{
    event_id: string;
    event_type: string;
    transaction_id: string;
    global_position: string;
    data: string;
    recorded_at: Date;
  }>(
    `SELECT e.event_id, e.event_type, e.transaction_id::text, e.global_position, e.data::text AS data,
            e.recorded_at
       FROM eventstore.events e
      WHERE e.event_type = ANY ($1::text[])
        AND (e.data->>'projectId' = $2 OR e.stream_name IN (
              SELECT stream_name FROM eventstore.events WHERE data->>'projectId' = $2))
      ORDER BY e.transaction_id, e.global_position`,
    [CHAINED_EVENT_TYPES, projectId],
  );
  return rows.map((r) => ({
    eventId: r.event_id,
    position: encodePgPosition(r.transaction_id, r.global_position),
    type: r.event_type,
    transactionId: r.transaction_id,
    globalPosition: r.global_position,
    data: r.data,
    recordedAt: r.recorded_at,
  }));
}
