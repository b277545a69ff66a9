import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { requestCommand, type CommandRequest } from '../../src/control/commands.js';
import { setDeviceStatus } from '../../src/control/device-admin.js';
import { setCapabilityGrant } from '../../src/control/grants.js';
import type { ControlEvent } from '../../src/domain/control/index.js';
import { deviceStreamName } from '../../src/domain/devices/index.js';
import { DomainError } from '../../src/domain/errors.js';
import type { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import type { EventStore, RecordedEvent } from '../../src/eventstore/port.js';
import { countingConflicts } from '../support/conflict-counter.js';
import type { TestDatabase } from '../support/database.js';
import { closeEventStore, openEventStore } from '../support/event-store.js';

/**
 * The gate's consistency against real PostgreSQL, with several "API processes" (store instances, each with
 * its own in-process queue) racing on one device stream. Every test first proves the writers overlapped
 * (append conflicts were met), then checks the outcome in the event store's own order.
 */
const PROJECT = 'prj_race';
const RELAY = 'actuator.relay';

describe('control plane races (real PostgreSQL)', function () {
  this.timeout(240_000);
  let db: TestDatabase;
  let base: PostgresEventStore;
  let processes: { store: EventStore; conflicts: () => number }[];

  before(async () => {
    ({ db: db, store: base } = await openEventStore());
    processes = Array.from({ length: 5 }, () => countingConflicts(base));
  });
  after(async () => {
    await closeEventStore({ db: db, store: base });
  });

  const conflicts = () => processes.reduce((n, p) => n + p.conflicts(), 0);
  const storeOf = (i: number) => processes[i % processes.length]!.store;

  async function verifiedDevice(): Promise<string> {
    const deviceId = `dev_${randomUUID()}`;
    const events: ControlEvent[] = [
      {
        type: 'DeviceRegistered',
        data: {
          deviceId,
          projectId: PROJECT,
          siteId: 'site_1',
          parentHubId: null,
          kind: 'device',
          manufacturer: 'Acme',
          productModel: 'R2',
          capabilities: [RELAY],
          profile: 'verified',
        },
      },
    ];
    await base.append(
      deviceStreamName(deviceId),
      events.map((e) => ({ id: randomUUID(), ...e })),
      'no_stream',
    );
    return deviceId;
  }

  const command = (deviceId: string, overrides: Partial<CommandRequest> = {}): CommandRequest => ({
    projectId: PROJECT,
    clientId: 'cli_1',
    scopes: new Set(['commands:write']),
    deviceId,
    capabilityKey: RELAY,
    value: true,
    mode: 'desired',
    ttlSeconds: 600,
    confirm: true,
    now: new Date(),
    ...overrides,
  });

  const grant = (store: EventStore, deviceId: string, write: boolean) =>
    setCapabilityGrant(store, {
      projectId: PROJECT,
      clientId: 'cli_admin',
      deviceId,
      capabilityKey: RELAY,
      write,
      now: new Date(),
    });

  /** Runs `rounds` rounds spread over `devices` devices in parallel, each device's rounds one after another. */
  async function spread(
    rounds: number,
    devices: string[],
    round: (deviceId: string, i: number) => Promise<void>,
  ) {
    let next = 0;
    await Promise.all(
      devices.map(async (deviceId) => {
        while (next < rounds) await round(deviceId, next++);
      }),
    );
  }

  const jitter = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.random() * ms));

  const settle = <T>(p: Promise<T>) =>
    p.then(
      (value) => ({ ok: true as const, value }),
      (error: unknown) => {
        if (error instanceof DomainError) return { ok: false as const, error };
        throw error;
      },
    );

  async function streamOf(deviceId: string): Promise<RecordedEvent[]> {
    return base.readStream(deviceStreamName(deviceId));
  }

  it('1,000 rounds of revoke racing a command: no command accepted after the revoke that stopped it', async () => {
    const devices = await Promise.all(Array.from({ length: 20 }, () => verifiedDevice()));
    const before = conflicts();
    let accepted = 0;
    let refused = 0;
    await spread(1000, devices, async (deviceId, i) => {
      await grant(storeOf(i), deviceId, true);
      const [, sent] = await Promise.all([
        jitter(2).then(() => grant(storeOf(i + 1), deviceId, false)),
        settle(requestCommand(storeOf(i + 2), command(deviceId, { idempotencyKey: `r-${i}` }))),
      ]);
      if (sent.ok) accepted++;
      else refused++;
    });
    expect(conflicts() - before, 'the revokes and commands overlapped').to.be.greaterThan(0);
    expect(accepted, 'some commands won the race').to.be.greaterThan(0);
    expect(refused, 'some revokes won the race').to.be.greaterThan(0);
    expect(accepted + refused).to.equal(1000);

    let acceptedInStore = 0;
    for (const deviceId of devices) {
      let granted = false;
      const pending = new Set<string>();
      for (const e of await streamOf(deviceId)) {
        const data = e.data as { commandId: string };
        if (e.type === 'CapabilityWriteGranted') granted = true;
        if (e.type === 'CapabilityWriteRevoked') granted = false;
        if (e.type === 'CommandAccepted') {
          expect(granted, `${data.commandId} accepted without a grant`).to.equal(true);
          acceptedInStore++;
          pending.add(data.commandId);
        }
        if (e.type === 'CommandCancelled' || e.type === 'CommandSuperseded') pending.delete(data.commandId);
      }
      expect([...pending], 'every command accepted before a revoke was cancelled by it').to.deep.equal([]);
    }
    expect(acceptedInStore).to.equal(accepted);
  });

  it('1,000 requests with one idempotency key in bursts of 50: exactly one CommandAccepted, one commandId', async () => {
    let deviceId = '';
    // A key names one command of the client's: each attempt's device takes a key of its own.
    let key = '';
    const burst = async (ids: Set<string>) => {
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          requestCommand(storeOf(i), command(deviceId, { idempotencyKey: key, mode: 'imperative' })),
        ),
      );
      for (const a of answers) ids.add(a.command.commandId);
    };
    const acceptances = async () =>
      (await streamOf(deviceId)).filter((e) => e.type === 'CommandAccepted').length;
    // Only a first burst can race (the later ones replay what it accepted), and one whose requests happened
    // not to overlap proves nothing: a fresh device is tried until a first burst races, at most ten.
    const ids = new Set<string>();
    let raced = false;
    for (let attempt = 0; attempt < 10 && !raced; attempt++) {
      deviceId = await verifiedDevice();
      key = `one-key-${attempt}`;
      await grant(base, deviceId, true);
      const before = conflicts();
      ids.clear();
      await burst(ids);
      raced = conflicts() - before > 0;
      expect(ids.size, 'one commandId for the key, raced or not').to.equal(1);
      expect(await acceptances()).to.equal(1);
    }
    expect(raced, 'a first burst raced on the device stream').to.equal(true);
    for (let n = 1; n < 20; n++) await burst(ids);
    expect(ids.size).to.equal(1);
    expect(await acceptances()).to.equal(1);
  });

  it('20 bursts of 50 with a fresh key each, on one device: one acceptance per key, every time', async () => {
    const deviceId = await verifiedDevice();
    await grant(base, deviceId, true);
    const before = conflicts();
    for (let burst = 0; burst < 20; burst++) {
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          requestCommand(
            storeOf(i),
            command(deviceId, { idempotencyKey: `burst-${burst}`, mode: 'imperative' }),
          ),
        ),
      );
      expect(new Set(answers.map((a) => a.command.commandId)).size).to.equal(1);
      expect(answers.filter((a) => !a.replayed)).to.have.length(1);
    }
    expect(conflicts() - before, 'the bursts raced').to.be.greaterThan(0);
    const accepted = (await streamOf(deviceId)).filter((e) => e.type === 'CommandAccepted');
    expect(accepted.map((e) => (e.data as { idempotencyKey: string }).idempotencyKey)).to.deep.equal(
      Array.from({ length: 20 }, (_, i) => `burst-${i}`),
    );
  });

  it('1,000 rounds of a lifecycle change racing a command: none accepted while the device is not active', async () => {
    const devices = await Promise.all(Array.from({ length: 20 }, () => verifiedDevice()));
    await Promise.all(devices.map((d) => grant(base, d, true)));
    const before = conflicts();
    let accepted = 0;
    let refused = 0;
    const statuses = ['quarantined', 'suspended'] as const;
    await spread(1000, devices, async (deviceId, i) => {
      const [, sent] = await Promise.all([
        // The command reads its key's stream first: give it a head start of up to 2 ms, so the two overlap.
        jitter(2).then(() =>
          setDeviceStatus(storeOf(i + 1), {
            deviceId,
            status: statuses[i % 2]!,
            reason: 'race',
            now: new Date(),
          }),
        ),
        settle(requestCommand(storeOf(i + 2), command(deviceId, { idempotencyKey: `l-${i}` }))),
      ]);
      if (sent.ok) accepted++;
      else refused++;
      await setDeviceStatus(storeOf(i), { deviceId, status: 'active', now: new Date() });
    });
    expect(conflicts() - before, 'the lifecycle changes and commands overlapped').to.be.greaterThan(0);
    expect(accepted).to.be.greaterThan(0);
    expect(refused).to.be.greaterThan(0);

    for (const deviceId of devices) {
      let active = true;
      const pending = new Set<string>();
      for (const e of await streamOf(deviceId)) {
        const data = e.data as { commandId: string; status: string };
        if (e.type === 'DeviceLifecycleChanged') {
          active = data.status === 'active';
        }
        if (e.type === 'CommandAccepted') {
          expect(active, `${data.commandId} accepted while the device was not active`).to.equal(true);
          pending.add(data.commandId);
        }
        if (e.type === 'CommandCancelled' || e.type === 'CommandSuperseded') pending.delete(data.commandId);
      }
      expect([...pending], 'every command accepted before the change was cancelled by it').to.deep.equal([]);
    }
  });
});
