import { expect } from 'chai';
import sinon from 'sinon';
import type { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import { createLogger } from '../../src/infra/logger.js';
import { createMetrics, type Metrics } from '../../src/infra/metrics.js';
import { RejectedMessage } from '../../src/ingress/rejected-message.js';
import { parseUplinkPayload } from '../../src/ingress/broker/topics.js';
import { readingsEventId } from '../../src/ingress/readings/event-id.js';
import { createReadingsIngestor, type ReadingsIngestor } from '../../src/ingress/readings/ingestor.js';
import { deleteExpiredReadings } from '../../src/ingress/readings/retention.js';
import { registerDevice } from '../support/registry.js';
import type { TestDatabase } from '../support/database.js';
import { closeEventStore, openEventStore } from '../support/event-store.js';

const PROJECT = 'prj_ingest';
const AGENT = { agentId: 'agt_ingest01', projectId: PROJECT };
const NOW = Date.parse('2026-06-01T12:00:00.000Z');

const payload = (body: unknown) => Buffer.from(JSON.stringify(body), 'utf8');

describe('readings ingest', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  let metrics: Metrics;
  let ingestor: ReadingsIngestor;
  let device: string;

  async function addDevice(capabilities: string[], projectId = PROJECT): Promise<string> {
    const { deviceId } = await registerDevice(store, {
      projectId,
      siteId: 'site_ingest',
      parentHubId: null,
      kind: 'device',
      manufacturer: 'Acme',
      productModel: 'EM-3',
      capabilities,
      profile: 'draft',
    });
    return deviceId;
  }

  /** What the uplink does with a readings message: parse it once, then hand it to the ingestor. */
  async function ingest(agent: typeof AGENT, deviceId: string, bytes: Buffer): Promise<void> {
    const topic = { kind: 'readings', agentId: agent.agentId, deviceId } as const;
    await ingestor.ingest(agent, deviceId, parseUplinkPayload(topic, bytes).payload, bytes);
  }

  async function storedReadings() {
    const { events } = await store.readAll({ maxCount: 10_000, eventTypes: ['ReadingsRecorded'] });
    return events;
  }

  beforeEach(async () => {
    ({ db, store } = await openEventStore({ idlePollMs: 50 }));
    metrics = createMetrics();
    ingestor = createReadingsIngestor({
      store,
      logger: createLogger('silent'),
      metrics,
      now: () => NOW,
      batchWindowMs: 5,
      maxBatchMessages: 500,
    });
    device = await addDevice(['environment.temperature', 'energy.produced_today', 'water.leak']);
  });
  afterEach(async () => {
    sinon.restore();
    await ingestor.close();
    await closeEventStore({ db, store });
  });

  it('stores a message as one ReadingsRecorded event with server time, site and normalised device times', async () => {
    await ingest(
      AGENT,
      device,
      payload({
        seq: 7,
        readings: [
          { capability: 'environment.temperature', value: 21.5, deviceTime: '2026-06-01T13:59:58+02:00' },
          { capability: 'water.leak', value: false },
          // A long fraction that starts with a zero: V8's Date.parse reads it as .123.
          { capability: 'energy.produced_today', value: 40, deviceTime: '2026-06-01T11:59:59.0123456789Z' },
          // Year 0 (ISO 8601's 1 BC), which the topic schema lets through.
          { capability: 'environment.temperature', value: 19, deviceTime: '0000-03-01T00:00:00+01:00' },
        ],
      }),
    );
    const [event] = await storedReadings();
    expect(event!.streamName).to.equal(`readings-${device}`);
    expect(event!.id).to.equal(
      readingsEventId({ agentId: AGENT.agentId, deviceId: device, seq: 7, payload: Buffer.alloc(0) }),
    );
    expect(event!.data).to.deep.equal({
      deviceId: device,
      projectId: PROJECT,
      siteId: 'site_ingest',
      agentId: AGENT.agentId,
      seq: 7,
      receivedAt: '2026-06-01T12:00:00.000Z',
      readings: [
        { capability: 'environment.temperature', value: 21.5, deviceTime: '2026-06-01T11:59:58.000Z' },
        { capability: 'water.leak', value: false },
        { capability: 'energy.produced_today', value: 40, deviceTime: '2026-06-01T11:59:59.012Z' },
        { capability: 'environment.temperature', value: 19, deviceTime: '0000-02-29T23:00:00.000Z' },
      ],
    });
    expect((await metrics.readingsStored.get()).values[0]!.value).to.equal(4);
  });

  it('groups concurrent messages into few appends and answers each caller only after its append', async () => {
    const original = store.appendBatch.bind(store);
    const committed = new Set<string>();
    const append = sinon.stub(store, 'appendBatch').callsFake(async (entries) => {
      const results = await original(entries);
      for (const r of results) committed.add(r.id);
      return results;
    });
    const answeredBeforeCommit: number[] = [];
    await Promise.all(
      Array.from({ length: 300 }, async (_, seq) => {
        const bytes = payload({
          seq,
          readings: [{ capability: 'environment.temperature', value: 20 + (seq % 10) }],
        });
        await ingest(AGENT, device, bytes);
        const id = readingsEventId({ agentId: AGENT.agentId, deviceId: device, seq, payload: bytes });
        if (!committed.has(id)) answeredBeforeCommit.push(seq);
      }),
    );
    expect(answeredBeforeCommit).to.deep.equal([]);
    expect(append.callCount).to.be.within(1, 10);
    expect(append.getCalls().reduce((n, call) => n + call.args[0].length, 0)).to.equal(300);
    expect(await storedReadings()).to.have.length(300);
  });

  it('stores a redelivered message once: by seq, or by its exact bytes when it has no seq', async () => {
    const withSeq = payload({ seq: 1, readings: [{ capability: 'environment.temperature', value: 20 }] });
    const withoutSeq = payload({ readings: [{ capability: 'environment.temperature', value: 21 }] });
    await ingest(AGENT, device, withSeq);
    await ingest(AGENT, device, withSeq);
    // The same seq re-serialised (the agent rebuilt it from its own queue): still the same message.
    await ingest(
      AGENT,
      device,
      payload({ readings: [{ value: 20, capability: 'environment.temperature' }], seq: 1 }),
    );
    // A redelivery racing its original lands in the same batch.
    await Promise.all([ingest(AGENT, device, withoutSeq), ingest(AGENT, device, withoutSeq)]);
    await ingest(AGENT, device, withoutSeq);
    expect((await storedReadings()).map((e) => (e.data as { seq?: number }).seq)).to.deep.equal([
      1,
      undefined,
    ]);
    expect((await metrics.readingsRedelivered.get()).values[0]!.value).to.equal(4);
  });

  it('refuses a bad message with RejectedMessage (acknowledged and dropped), and keeps the good readings of a mixed one', async () => {
    const refusals: [string, Buffer][] = [
      ['invalid_json', Buffer.from('{"readings": [')],
      ['invalid_payload', payload({ readings: [] })],
      ['invalid_readings', payload({ readings: [{ capability: 'environment.temperature', value: '21' }] })],
      ['invalid_readings', payload({ readings: [{ capability: 'environment.co2', value: 400 }] })],
      ['invalid_readings', payload({ readings: [{ capability: 'water.leak', value: 1 }] })],
    ];
    for (const [reason, bytes] of refusals) {
      const error = await ingest(AGENT, device, bytes).catch((e: unknown) => e);
      expect(error, reason).to.be.instanceOf(RejectedMessage);
      expect((error as RejectedMessage).reason).to.equal(reason);
    }
    const stranger = await ingest({ ...AGENT, projectId: 'prj_other' }, device, refusals[2]![1]).catch(
      (e: unknown) => e,
    );
    expect((stranger as RejectedMessage).reason).to.equal('unknown_device');

    await ingest(
      AGENT,
      device,
      payload({
        readings: [
          { capability: 'environment.temperature', value: 1e6 },
          { capability: 'energy.produced_today', value: 3.25 },
        ],
      }),
    );
    const events = await storedReadings();
    expect(events.map((e) => (e.data as { readings: unknown[] }).readings)).to.deep.equal([
      [{ capability: 'energy.produced_today', value: 3.25 }],
    ]);
    const refused = (await metrics.readingsRefused.get()).values.map((v) => [v.labels.reason, v.value]);
    expect(refused).to.deep.include.members([
      ['wrong_type', 2],
      ['not_a_device_capability', 1],
      ['out_of_range', 1],
    ]);
  });

  it('accepts readings of a device adopted a moment ago, before the devices read model has it', async () => {
    const fresh = await addDevice(['environment.humidity']);
    await ingest(AGENT, fresh, payload({ readings: [{ capability: 'environment.humidity', value: 55 }] }));
    expect((await storedReadings()).map((e) => e.streamName)).to.deep.equal([`readings-${fresh}`]);
  });

  it('rejects every caller of a failed append with an error that is not a refusal, so all are redelivered', async () => {
    sinon.stub(store, 'appendBatch').rejects(new Error('could not write to the event store'));
    const outcomes = await Promise.allSettled(
      Array.from({ length: 20 }, (_, seq) =>
        ingest(
          AGENT,
          device,
          payload({ seq, readings: [{ capability: 'environment.temperature', value: 20 }] }),
        ),
      ),
    );
    expect(outcomes.every((o) => o.status === 'rejected')).to.equal(true);
    for (const outcome of outcomes) {
      const reason = (outcome as PromiseRejectedResult).reason as Error;
      expect(reason).not.to.be.instanceOf(RejectedMessage);
      expect(reason.message).to.equal('could not write to the event store');
    }
    sinon.restore();
    expect(await storedReadings()).to.have.length(0);
  });

  it('retention deletes reading events recorded before the horizon and records it; control-plane events stay', async () => {
    for (let seq = 0; seq < 5; seq++) {
      await ingest(
        AGENT,
        device,
        payload({ seq, readings: [{ capability: 'environment.temperature', value: 20 }] }),
      );
    }
    const recordedNow = Date.now();
    const kept = await deleteExpiredReadings(store, { retentionDays: 1, now: recordedNow });
    expect(kept).to.deep.equal({ deleted: 0, supported: true });
    expect(await store.retentionHorizon(['ReadingsRecorded'])).to.equal(undefined);

    const last = (await storedReadings()).at(-1);
    const result = await deleteExpiredReadings(store, {
      retentionDays: 1,
      now: recordedNow + 2 * 86_400_000,
      batchSize: 2,
    });
    expect(result).to.deep.equal({ deleted: 5, supported: true });
    expect(await storedReadings()).to.have.length(0);
    expect(await store.retentionHorizon(['ReadingsRecorded'])).to.equal(last!.position);
    expect((await store.readAll({ maxCount: 100, eventTypes: ['DeviceRegistered'] })).events).to.have.length(
      1,
    );
  });
});
