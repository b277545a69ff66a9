import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import sinon from 'sinon';
import { signCheckpoints } from '../../src/audit/checkpoints.js';
import { auditPublicKeys, signatureCheck, type AuditSigner } from '../../src/audit/signing-keys.js';
import { checkpointDigest, eventDigest, genesisLink, nextLink } from '../../src/domain/audit/chain.js';
import {
  checkpointPayload,
  checkpointStream,
  type AuditCheckpoint,
} from '../../src/domain/audit/checkpoint-events.js';
import { createLogger } from '../../src/infra/logger.js';
import { AUDIT_CHAIN_PROJECTOR, auditChainProjector } from '../../src/projections/audit-chain/projector.js';
import { readCheckpoint } from '../../src/projections/checkpoints.js';
import { runProjector } from '../../src/projections/runner.js';
import type { TestDatabase } from './database.js';
import { until } from './edge-agent.js';
import { untilVisible } from './event-store.js';
import { CHAINED_EVENT_TYPES } from '../../src/domain/audit/chained-events.js';
import {
  WrongExpectedRevisionError,
  type EventStore,
  type NewEvent,
  type RecordedEvent,
} from '../../src/eventstore/port.js';
import { eventDefinition } from '../../src/domain/events/all.js';
import type { Pool } from '../../src/infra/postgres/pool.js';
import { sha256Hex } from '../../src/infra/sha256.js';

/** One row of audit_chain_links, as text. */
export interface LinkRow {
  readonly position: string;
  readonly projectId: string;
  readonly sequence: number;
  readonly digest: string;
  readonly link: string;
  readonly recordedAt: string;
}

/** An event as the service records it: its data must pass the event's own schema. */
function event(type: string, data: Record<string, unknown>): NewEvent {
  const definition = eventDefinition(type);
  if (!definition) throw new Error(`no event type ${type}`);
  return { id: randomUUID(), type, data: definition.schema.parse(data) as Record<string, unknown> };
}

const at = '2026-01-01T00:00:00.000Z';
const by = { kind: 'client', clientId: 'cli_operator1' };

/** One more chained event of the project: its client revoked. */
export function clientRevoked(projectId: string): NewEvent {
  return event('ClientRevoked', { projectId, clientId: `cli_${projectId}` });
}

/**
 * A small control history of one project (`prj_` and 8 or more characters) as the service records it: the
 * project, a client, a device registered, its profile and lifecycle moves (which name only the device), a
 * grant and a command with its delivery (8 chained events); and beside them what is not chained: readings
 * and connectivity. Text with quotes, escapes and characters outside ASCII, so the bytes chained are not
 * trivially ASCII.
 */
export async function appendProjectHistory(store: EventStore, projectId: string): Promise<void> {
  const deviceId = `dev_${randomUUID().slice(0, 8)}`;
  const device = `device-${deviceId}`;
  const commandId = `cmd_${randomUUID().slice(0, 8)}`;
  const ref = { deviceId, projectId, commandId };
  await store.append(
    `project-${projectId}`,
    [event('ProjectCreated', { projectId, name: `Büro "Süd" ⚡ ${projectId}` })],
    'no_stream',
  );
  await store.append(
    `client-${projectId}`,
    [
      event('ClientCreated', {
        projectId,
        clientId: `cli_${projectId}`,
        scopes: ['devices:read'],
        authMethod: 'basic',
        secretHash: '$hmac-sha256$k=key1$AAAA',
        name: 'a\nb\t\\c',
      }),
    ],
    'any',
  );
  await store.append(
    device,
    [
      event('DeviceRegistered', {
        deviceId,
        projectId,
        siteId: 'site_1',
        parentHubId: null,
        kind: 'device',
        manufacturer: 'Acme 😀',
        productModel: 'R2\u2028',
        capabilities: ['actuator.relay'],
        profile: 'draft',
      }),
    ],
    'no_stream',
  );
  await store.appendBatch([
    {
      streamName: `readings-${deviceId}`,
      event: event('ReadingsRecorded', {
        projectId,
        deviceId,
        agentId: 'agt_1',
        receivedAt: at,
        readings: [{ capability: 'environment.temperature', value: 21.5 }],
      }),
    },
  ]);
  await store.append(
    device,
    [event('DeviceProfileVerified', { deviceId, reason: 'bench tested', by, at })],
    'any',
  );
  await store.append(
    `connectivity-${deviceId}`,
    [
      event('DeviceConnectivityChanged', {
        projectId,
        deviceId,
        connectivity: 'online',
        observedAt: at,
        cause: 'agent_connected',
      }),
    ],
    'any',
  );
  await store.append(
    device,
    [
      event('CapabilityWriteGranted', { deviceId, projectId, capability: 'actuator.relay', by, at }),
      event('CommandAccepted', {
        ...ref,
        capability: 'actuator.relay',
        value: true,
        mode: 'imperative',
        ttlSeconds: 60,
        acceptedAt: at,
        expiresAt: '2026-01-01T00:01:00.000Z',
        by,
        idempotencyKey: `key-${commandId}`,
        requestHash: `hash-${commandId}`,
      }),
      event('CommandSent', { ...ref, agentId: 'agt_1', attempt: 1, sentAt: at }),
      event('DeviceLifecycleChanged', { deviceId, status: 'retired', reason: 'end of life', by, at }),
    ],
    'any',
  );
}

/**
 * The histories of these projects written at once, so their events interleave in the global order; the head
 * position after them, once readers see it.
 */
export async function appendProjectHistories(
  store: EventStore,
  projects: readonly string[],
): Promise<string> {
  await Promise.all(projects.map((p) => appendProjectHistory(store, p)));
  const head = (await store.headPosition())!;
  await untilVisible(store, head);
  return head;
}

/** What the domain's chain functions make of the store's chained events, computed here from scratch. */
export async function expectedChain(store: EventStore): Promise<LinkRow[]> {
  const events: RecordedEvent[] = [];
  for (let after: string | undefined; ;) {
    const page = await store.readAll({
      after,
      maxCount: 500,
      eventTypes: CHAINED_EVENT_TYPES,
      dataAsStored: true,
    });
    events.push(...page.events);
    if (page.lastPosition !== undefined) after = page.lastPosition;
    if (page.atEnd) break;
  }
  const devices = new Map<string, string>();
  const heads = new Map<string, { sequence: number; link: string }>();
  const rows: LinkRow[] = [];
  for (const e of events) {
    const data = e.data as { projectId?: string; deviceId?: string };
    if (e.type === 'DeviceRegistered') devices.set(data.deviceId!, data.projectId!);
    const projectId = data.projectId ?? devices.get(data.deviceId!);
    if (projectId === undefined) continue;
    const head = heads.get(projectId) ?? { sequence: 0, link: genesisLink(sha256Hex, projectId) };
    const recordedAt = e.recordedAt.toISOString();
    const digest = eventDigest(sha256Hex, {
      position: e.position,
      type: e.type,
      streamName: e.streamName,
      recordedAt,
      data: e.dataText ?? JSON.stringify(e.data),
    });
    const next = { sequence: head.sequence + 1, link: nextLink(sha256Hex, head.link, digest) };
    heads.set(projectId, next);
    rows.push({ position: e.position, projectId, ...next, digest, recordedAt });
  }
  return rows;
}

/** The chain's links as the projector stored them, in global order. */
export async function storedLinks(pool: Pool): Promise<LinkRow[]> {
  const { rows } = await pool.query<{
    position: string;
    project_id: string;
    sequence: string;
    digest: string;
    link: string;
    recorded_at: Date;
  }>('SELECT * FROM audit_chain_links ORDER BY position');
  return rows.map((r) => ({
    position: r.position,
    projectId: r.project_id,
    sequence: Number(r.sequence),
    digest: r.digest,
    link: r.link,
    recordedAt: r.recorded_at.toISOString(),
  }));
}

/**
 * Makes two checkpoint signers race for sure: every read of an audit stream waits until two readers have
 * read it, so both see the same newest checkpoint before either appends. Records how each append ended.
 */
export function raceOnAuditStreams(store: EventStore): { outcomes: string[]; reset(): void } {
  const readStream = store.readStream.bind(store);
  const append = store.append.bind(store);
  const gates = new Map<string, { readers: number; open: Promise<void>; release: () => void }>();
  const outcomes: string[] = [];
  sinon.stub(store, 'readStream').callsFake(async (name, options) => {
    const events = await readStream(name, options);
    if (!name.startsWith('audit-')) return events;
    let gate = gates.get(name);
    if (!gate) {
      let release!: () => void;
      const open = new Promise<void>((resolve) => (release = resolve));
      gate = { readers: 0, open, release };
      gates.set(name, gate);
    }
    if (++gate.readers === 2) gate.release();
    await gate.open;
    return events;
  });
  sinon.stub(store, 'append').callsFake(async (name, events, expected) => {
    try {
      const result = await append(name, events, expected);
      outcomes.push('appended');
      return result;
    } catch (error) {
      outcomes.push(error instanceof WrongExpectedRevisionError ? 'wrong revision' : String(error));
      throw error;
    }
  });
  return {
    outcomes,
    reset() {
      gates.clear();
      outcomes.length = 0;
    },
  };
}

/** Runs the chain projector with the real runner over `store` until its checkpoint reaches `position` (or passes it). */
export async function projectChainUntil(
  readModels: TestDatabase,
  store: EventStore,
  position: string,
): Promise<void> {
  const stop = new AbortController();
  const running = runProjector(readModels.pool, store, auditChainProjector(), {
    batchSize: 3,
    locks: readModels.locks,
    signal: stop.signal,
    logger: createLogger('silent'),
    standbyRetryMs: 50,
  });
  try {
    await until(
      'the chain projector at the position',
      async () => {
        const at = (await readCheckpoint(readModels.pool, AUDIT_CHAIN_PROJECTOR))?.position;
        return at !== undefined && store.comparePositions(at, position) >= 0 ? true : undefined;
      },
      20_000,
    );
  } finally {
    stop.abort();
    await running;
  }
}

/**
 * The checkpoints of a project form one signed sequence with these counts: sequences 0, 1, …, each naming
 * the digest of the one before, each signature valid under the database's audit keys.
 */
export async function expectContinuousCheckpoints(
  store: EventStore,
  pool: Pool,
  projectId: string,
  counts: readonly number[],
): Promise<AuditCheckpoint[]> {
  const list = (await store.readStream(checkpointStream(projectId))).map((e) => e.data as AuditCheckpoint);
  expect(list.map((c) => [c.sequence, c.count])).to.deep.equal(counts.map((count, i) => [i, count]));
  const check = signatureCheck(await auditPublicKeys(pool));
  list.forEach((c, i) => {
    expect(check(c.keyId, checkpointPayload(c), c.signature), `checkpoint ${i} signature`).to.equal('valid');
    const before = list[i - 1];
    expect(c.previous).to.equal(
      before ? checkpointDigest(sha256Hex, checkpointPayload(before), before.signature) : null,
    );
  });
  return list;
}

/** Two signers at once (raceOnAuditStreams makes it a race): what they signed, as `project#sequence`. */
export async function signTwiceAtOnce(
  store: EventStore,
  pool: Pool,
  signer: AuditSigner,
  now: Date,
): Promise<string[]> {
  const both = await Promise.all([
    signCheckpoints({ store, pool, signer, now }),
    signCheckpoints({ store, pool, signer, now }),
  ]);
  return both
    .flat()
    .map((s) => `${s.projectId}#${s.sequence}`)
    .sort();
}
