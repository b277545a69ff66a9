import { randomUUID } from 'node:crypto';
import type { Connectivity, ConnectivityEvent, HubConnectionEvent } from '../domain/connectivity/events.js';
import { WrongExpectedRevisionError, type EventStore, type ExpectedRevision } from '../eventstore/port.js';

/** Each device's reachability history has its own stream, so recording it never contends with its registry. */
export const connectivityStreamName = (deviceId: string) => `connectivity-${deviceId}`;

const MAX_ATTEMPTS = 5;

interface Known {
  readonly connectivity: Connectivity | undefined;
  /** The agent connection the last change of a hub came from, when it came from one. */
  readonly connectionId: string | undefined;
  readonly revision: ExpectedRevision;
}

/** The agent connection behind a hub's change: the connection that opened, or the one that ended. */
export interface HubConnection {
  readonly hubId: string;
  /** Undefined for a will stored before connections were named: it is not fenced. */
  readonly connectionId: string | undefined;
}

/**
 * Records DeviceConnectivityChanged only when a device's connectivity really changes. What was last recorded
 * comes from the device's connectivity stream (read once per process, then remembered), and every append
 * expects the revision it was decided on: an ingress instance that raced another one re-reads and decides
 * again, so the rule holds across instances too.
 *
 * A hub's changes from its agent's connection name that connection. An agent that connects again (on any
 * broker node) while still online on record gets HubConnectionReplaced (no connectivity change, so no
 * device_status frame), so its new connection is on record; the end of a
 * connection that is not the last one on record (a will published late by a dead node's successor, a
 * stale socket's close) changes nothing: `record` answers false, and the caller leaves the agent alone.
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
    connection?: HubConnection,
  ): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      if (connection && connectivity !== 'online' && (await this.#isSuperseded(connection))) return false;
      const changes: { deviceId: string; expected: ExpectedRevision; connectionId: string | undefined }[] =
        [];
      const replaced: typeof changes = [];
      for (const deviceId of new Set(deviceIds)) {
        const known = this.#known.get(deviceId) ?? (await this.#load(deviceId));
        const connectionId = deviceId === connection?.hubId ? connection.connectionId : undefined;
        const change = { deviceId, expected: known.revision, connectionId };
        if (known.connectivity !== connectivity) changes.push(change);
        // Online already, through another connection: no change to report, but the new connection.
        else if (
          connectivity === 'online' &&
          connectionId !== undefined &&
          known.connectionId !== connectionId
        )
          replaced.push(change);
      }
      if (changes.length + replaced.length === 0) return true;
      const observedAt = now.toISOString();
      try {
        const recorded = [...changes, ...replaced];
        const results = await this.#store.appendMany(
          recorded.map(({ deviceId, expected, connectionId }, i) => {
            const event: ConnectivityEvent | HubConnectionEvent =
              i < changes.length
                ? {
                    type: 'DeviceConnectivityChanged',
                    data: {
                      deviceId,
                      projectId,
                      connectivity,
                      observedAt,
                      cause,
                      ...(connectionId && { connectionId }),
                    },
                  }
                : {
                    type: 'HubConnectionReplaced',
                    data: { deviceId, projectId, connectionId: connectionId!, observedAt },
                  };
            return {
              streamName: connectivityStreamName(deviceId),
              events: [{ id: randomUUID(), ...event }],
              expectedRevision: expected,
            };
          }),
        );
        recorded.forEach(({ deviceId, connectionId }, i) =>
          this.#known.set(deviceId, { connectivity, connectionId, revision: results[i]!.nextRevision }),
        );
        return true;
      } catch (error) {
        if (!(error instanceof WrongExpectedRevisionError) || attempt >= MAX_ATTEMPTS) throw error;
        // Another instance recorded a change since: forget what this one remembered and decide again.
        for (const { deviceId } of [...changes, ...replaced]) this.#known.delete(deviceId);
        if (connection) this.#known.delete(connection.hubId);
      }
    }
  }

  /** Whether the hub is online through a connection other than this one. */
  async #isSuperseded({ hubId, connectionId }: HubConnection): Promise<boolean> {
    if (connectionId === undefined) return false;
    const known = this.#known.get(hubId) ?? (await this.#load(hubId));
    return (
      known.connectivity === 'online' &&
      known.connectionId !== undefined &&
      known.connectionId !== connectionId
    );
  }

  async #load(deviceId: string): Promise<Known> {
    const events = await this.#store.readStream(connectivityStreamName(deviceId));
    const last = events.at(-1);
    const lastChange = events.findLast((e) => e.type === 'DeviceConnectivityChanged');
    const known: Known = last
      ? {
          connectivity: (lastChange?.data as ConnectivityEvent['data'] | undefined)?.connectivity,
          // Both event types of the stream name the connection they came from, when they came from one.
          connectionId: (last.data as { connectionId?: string }).connectionId,
          revision: last.revision,
        }
      : { connectivity: undefined, connectionId: undefined, revision: 'no_stream' };
    this.#known.set(deviceId, known);
    return known;
  }
}
