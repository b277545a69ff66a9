import { createHash } from 'node:crypto';
import { bindingDecider, bindingStreamName, type Binding } from '../domain/bindings/index.js';
import { handleCommand } from '../eventstore/handle-command.js';
import type { EventStore } from '../eventstore/port.js';
import { loadDevice } from './devices.js';
import { newBindingId } from './ids.js';

export interface BindingRequest {
  readonly deviceId: string;
  readonly resourceType: string;
  readonly resourceId: string;
  readonly channelMapping: Readonly<Record<string, string>>;
}

export interface BindingOutcome {
  readonly binding: Binding;
  /** Position of the event that holds the binding, for read-your-writes. */
  readonly position: string;
  /** False when an earlier request with the same idempotency key had already created it. */
  readonly created: boolean;
}

/**
 * Binds a registered device of the caller's project to an object of the application. With an idempotency
 * key the stream is named after (project, key), so concurrent retries race on one no-stream append: the
 * first wins and the others find its binding (same request) or a conflict (different request).
 */
export async function createBinding(
  store: EventStore,
  input: {
    projectId: string;
    request: BindingRequest;
    idempotencyKey: string | undefined;
    at: Date;
  },
  metadata: Record<string, unknown> = {},
): Promise<BindingOutcome> {
  const { projectId, request, idempotencyKey } = input;
  const bindingId = newBindingId();
  const streamName = bindingStreamName(
    idempotencyKey === undefined ? bindingId : sha256(`${projectId}\u0000${idempotencyKey}`),
  );
  const device = await loadDevice(store, request.deviceId);
  const result = await handleCommand(
    store,
    streamName,
    bindingDecider,
    {
      type: 'CreateBinding',
      bindingId,
      projectId,
      ...request,
      requestFingerprint: fingerprint(request),
      idempotencyKey: idempotencyKey ?? null,
      at: input.at.toISOString(),
      device: device.registered ? { projectId: device.projectId } : undefined,
    },
    { metadata },
  );
  const binding = result.state.binding!;
  if (result.appended) return { binding, position: result.appended.position, created: true };
  const [stored] = await store.readStream(streamName, { maxCount: 1 });
  return { binding, position: stored!.position, created: false };
}

/** The request's content, independent of key order in channelMapping, as a retry must match it. */
function fingerprint(request: BindingRequest): string {
  const mapping = Object.keys(request.channelMapping)
    .sort()
    .map((key) => [key, request.channelMapping[key]]);
  return sha256(JSON.stringify([request.deviceId, request.resourceType, request.resourceId, mapping]));
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
