import { isCapabilityKey } from '../catalogue/index.js';
import type { Decider } from '../decider.js';
import { Conflict, InvalidInput, NotFound } from '../errors.js';
import type { Binding, BindingEvent } from './events.js';

/**
 * What the binding needs to know of the device, read from the device's own stream by the caller:
 * undefined when no device with that public id was ever registered (a pairing candidate has none).
 */
interface BindableDevice {
  readonly projectId: string;
}

export interface CreateBinding {
  readonly type: 'CreateBinding';
  readonly bindingId: string;
  readonly projectId: string;
  readonly deviceId: string;
  readonly resourceType: string;
  readonly resourceId: string;
  readonly channelMapping: Readonly<Record<string, string>>;
  readonly requestFingerprint: string;
  readonly idempotencyKey: string | null;
  /** ISO 8601 time of the request. */
  readonly at: string;
  readonly device: BindableDevice | undefined;
}

export type BindingCommand = CreateBinding;

/**
 * A binding stream holds one binding. With an idempotency key, the stream is named after (project, key),
 * so "first request wins" is the store's no-stream append, and a retry finds the binding here.
 */
export interface BindingState {
  readonly binding: Binding | undefined;
}

export const bindingStreamName = (suffix: string) => `binding-${suffix}`;

export const bindingDecider: Decider<BindingCommand, BindingEvent, BindingState> = {
  initialState: () => ({ binding: undefined }),

  decide(command, state) {
    if (state.binding) {
      if (state.binding.requestFingerprint === command.requestFingerprint) return []; // a safe retry
      throw new Conflict('idempotency_key_reused');
    }
    if (!command.device || command.device.projectId !== command.projectId) throw new NotFound('device');
    const unknown = Object.keys(command.channelMapping).find((key) => !isCapabilityKey(key));
    if (unknown !== undefined) throw new InvalidInput('unknown_capability', `channelMapping.${unknown}`);
    return [
      {
        type: 'BindingCreated',
        data: {
          bindingId: command.bindingId,
          projectId: command.projectId,
          deviceId: command.deviceId,
          resourceType: command.resourceType,
          resourceId: command.resourceId,
          channelMapping: { ...command.channelMapping },
          requestFingerprint: command.requestFingerprint,
          idempotencyKey: command.idempotencyKey,
          createdAt: command.at,
        },
      },
    ];
  },

  evolve(state, event) {
    return event.type === 'BindingCreated' ? { binding: event.data } : state;
  },
};
