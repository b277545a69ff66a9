import { deviceStreamName } from '../../domain/devices/index.js';
import type { EventStore, RecordedEvent } from '../../eventstore/port.js';
import { SOURCE_EVENT_TYPES, type FrameLookups } from './frames.js';

const NEEDS_PROJECT = new Set(['DeviceLifecycleChanged', 'DeviceProfileVerified', 'DeviceProfileDowngraded']);
// Every command update but the acceptance, which names the capability itself.
const NEEDS_CAPABILITY = new Set(SOURCE_EVENT_TYPES.command_update.filter((t) => t !== 'CommandAccepted'));

/**
 * What some events leave out and a frame needs: a device's project (lifecycle and profile events name only
 * the device) and a command's capability (only its acceptance names it). Both never change, so they are
 * learnt from the events going by and kept; a miss (an event older than this process) reads the device's own
 * stream once, never a read model, so every process derives the same frames. `prepare` runs once per batch,
 * before frames are built, so building them stays synchronous and query-free.
 */
export class LiveDirectory implements FrameLookups {
  readonly #projects = new BoundedMap<string, string>(200_000);
  readonly #capabilities = new BoundedMap<string, string>(200_000);

  constructor(private readonly store: Pick<EventStore, 'readStream'>) {}

  projectOfDevice(deviceId: string): string | undefined {
    return this.#projects.get(deviceId);
  }

  capabilityOfCommand(commandId: string): string | undefined {
    return this.#capabilities.get(commandId);
  }

  async prepare(events: readonly RecordedEvent[]): Promise<void> {
    for (const event of events) this.#learn(event);
    const missing = new Set<string>();
    for (const event of events) {
      const data = event.data as { deviceId?: string; commandId?: string };
      if (!data.deviceId) continue;
      if (NEEDS_PROJECT.has(event.type) && !this.#projects.has(data.deviceId)) missing.add(data.deviceId);
      if (NEEDS_CAPABILITY.has(event.type) && data.commandId && !this.#capabilities.has(data.commandId))
        missing.add(data.deviceId);
    }
    for (const deviceId of missing) {
      for (const event of await this.store.readStream(deviceStreamName(deviceId))) this.#learn(event);
    }
  }

  #learn(event: RecordedEvent): void {
    const data = event.data as {
      deviceId?: string;
      projectId?: string;
      commandId?: string;
      capability?: string;
    };
    if (event.type === 'DeviceRegistered' && data.deviceId && data.projectId)
      this.#projects.set(data.deviceId, data.projectId);
    if (event.type === 'CommandAccepted' && data.commandId && data.capability)
      this.#capabilities.set(data.commandId, data.capability);
  }
}

/** A map that forgets its oldest entries past `max`: a forgotten one is simply read again. */
class BoundedMap<K, V> extends Map<K, V> {
  constructor(private readonly max: number) {
    super();
  }

  override set(key: K, value: V): this {
    if (!this.has(key) && this.size >= this.max) {
      const oldest = this.keys().next();
      if (!oldest.done) this.delete(oldest.value);
    }
    return super.set(key, value);
  }
}
