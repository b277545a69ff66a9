import { randomUUID } from 'node:crypto';
import type { Connectivity, ConnectivityEvent } from '../domain/connectivity/events.js';
import { WrongExpectedRevisionError, type EventStore, type ExpectedRevision } from '../eventstore/port.js';

/** Each device's reachability history has its own stream, so recording it never contends with its registry. */
export const connectivityStreamName = (deviceId: string) => `connectivity-${deviceId}`;

const MAX_ATTEMPTS = 5;

interface Known {
  readonly connectivity: Connectivity | undefined;
  readonly revision: ExpectedRevision;
}

/**
 * Records DeviceConnectivityChanged only when a device's connectivity really changes. What was last recorded
 * comes from the device's connectivity stream (read once per process, then remembered), and every append
 * expects the revision it was decided on: an ingress instance that raced another one re-reads and decides
 * again, so the rule holds across instances too.
 */
export class ConnectivityRecorder {
  readonly #store: EventStore;
  readonly #known = new Map<string, Known>();

  constructor(store: EventStore) {
    this.#store = store;
  }

  async record(
    projectId: string,
    deviceIds: readonly string[],
    connectivity: Connectivity,
    cause: string,
    now: Date,
  ): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const changes: { deviceId: string; expected: ExpectedRevision }[] = [];
      for (const deviceId of new Set(deviceIds)) {
        const known = this.#known.get(deviceId) ?? (await this.#load(deviceId));
        if (known.connectivity !== connectivity) changes.push({ deviceId, expected: known.revision });
      }
      if (changes.length === 0) return;
      const observedAt = now.toISOString();
      try {
        const results = await this.#store.appendMany(
          changes.map(({ deviceId, expected }) => {
            const event: ConnectivityEvent = {
              type: 'DeviceConnectivityChanged',
              data: { deviceId, projectId, connectivity, observedAt, cause },
            };
            return {
              streamName: connectivityStreamName(deviceId),
              events: [{ id: randomUUID(), ...event }],
              expectedRevision: expected,
            };
          }),
        );
        changes.forEach(({ deviceId }, i) =>
          this.#known.set(deviceId, { connectivity, revision: results[i]!.nextRevision }),
        );
        return;
      } catch (error) {
        if (!(error instanceof WrongExpectedRevisionError) || attempt >= MAX_ATTEMPTS) throw error;
        // Another instance recorded a change since: forget what this one remembered and decide again.
        for (const { deviceId } of changes) this.#known.delete(deviceId);
      }
    }
  }

  async #load(deviceId: string): Promise<Known> {
    const events = await this.#store.readStream(connectivityStreamName(deviceId));
    const last = events.at(-1);
    const known: Known = last
      ? { connectivity: (last.data as ConnectivityEvent['data']).connectivity, revision: last.revision }
      : { connectivity: undefined, revision: 'no_stream' };
    this.#known.set(deviceId, known);
    return known;
  }
}
