import { DeviceRegistered, deviceStreamName } from '../../domain/devices/index.js';
import type { EventStore } from '../../eventstore/port.js';

/** What ingest needs to know of a device. */
export interface ReadingDevice {
  readonly deviceId: string;
  readonly projectId: string;
  readonly siteId: string;
  readonly capabilities: ReadonlySet<string>;
}

/**
 * Devices by public id for ingest, from the first event of each device's own stream behind a small cache.
 * Recording readings is a write, so it reads no read model: DeviceRegistered holds all it needs (project,
 * site and capabilities are fixed at registration), and a device adopted a moment ago is there at once.
 * Only found devices are cached (the TTL bounds how long a device stays remembered).
 */
export class DeviceDirectory {
  readonly #store: EventStore;
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  readonly #cache = new Map<string, { device: ReadingDevice; until: number }>();
  readonly #inFlight = new Map<string, Promise<ReadingDevice | undefined>>();

  constructor(options: { store: EventStore; now: () => number; ttlMs?: number; maxEntries?: number }) {
    this.#store = options.store;
    this.#now = options.now;
    this.#ttlMs = options.ttlMs ?? 60_000;
    this.#maxEntries = options.maxEntries ?? 50_000;
  }

  /** The device if it exists in this project. */
  async find(projectId: string, deviceId: string): Promise<ReadingDevice | undefined> {
    const key = `${projectId}/${deviceId}`;
    const cached = this.#cache.get(key);
    if (cached && cached.until > this.#now()) return cached.device;
    let pending = this.#inFlight.get(key);
    if (!pending) {
      pending = this.#load(projectId, deviceId).finally(() => this.#inFlight.delete(key));
      this.#inFlight.set(key, pending);
    }
    const device = await pending;
    if (device) this.#remember(key, device);
    return device;
  }

  async #load(projectId: string, deviceId: string): Promise<ReadingDevice | undefined> {
    const [first] = await this.#store.readStream(deviceStreamName(deviceId), { maxCount: 1 });
    if (first?.type !== DeviceRegistered.type) return undefined;
    const registered = DeviceRegistered.schema.safeParse(first.data);
    if (!registered.success || registered.data.projectId !== projectId) return undefined;
    return {
      deviceId,
      projectId,
      siteId: registered.data.siteId,
      capabilities: new Set(registered.data.capabilities),
    };
  }

  #remember(key: string, device: ReadingDevice) {
    this.#cache.delete(key);
    if (this.#cache.size >= this.#maxEntries) {
      const oldest = this.#cache.keys().next().value;
      if (oldest !== undefined) this.#cache.delete(oldest);
    }
    this.#cache.set(key, { device, until: this.#now() + this.#ttlMs });
  }
}
