import { Conflict, NotFound } from '../domain/errors.js';
import {
  pairingDecider,
  pairingStreamName,
  windowDurationSeconds,
  type CloseReason,
} from '../domain/pairing/index.js';
import { handleCommand } from '../eventstore/handle-command.js';
import type { EventStore } from '../eventstore/port.js';
import { newPairingSessionId } from '../registry/ids.js';
import { loadHub } from './hub.js';

type Metadata = Record<string, unknown>;

/**
 * Opens a pairing window on a hub of the project. The decision folds the hub's pairing stream and appends
 * at the revision it read, so of two concurrent opens exactly one records a window and the other, retried
 * against the new revision, finds it open: Conflict pairing_window_open carrying its session id.
 */
export async function openPairingWindow(
  store: EventStore,
  input: { projectId: string; hubId: string; durationSeconds?: number; now: Date },
  metadata: Metadata = {},
): Promise<{ sessionId: string; openedAt: string; closesAt: string; position: string }> {
  const duration = windowDurationSeconds(input.durationSeconds);
  const hub = await loadHub(store, input.hubId);
  if (!hub || hub.projectId !== input.projectId) throw new NotFound('hub');
  if (hub.status !== 'active') throw new Conflict('hub_not_active', { status: hub.status });
  const sessionId = newPairingSessionId();
  const openedAt = input.now.toISOString();
  const closesAt = new Date(input.now.getTime() + duration * 1000).toISOString();
  const result = await handleCommand(
    store,
    pairingStreamName(input.hubId),
    pairingDecider,
    {
      type: 'OpenWindow',
      sessionId,
      hubId: input.hubId,
      projectId: input.projectId,
      at: openedAt,
      closesAt,
    },
    { metadata },
  );
  return { sessionId, openedAt, closesAt, position: result.appended!.position };
}

/**
 * Closes a window: at once (`closed_by_client`), or only if its deadline has passed (`deadline`, the
 * scheduler's sweep and timers). Closing a closed window records nothing.
 */
export async function closePairingWindow(
  store: EventStore,
  input: { hubId: string; sessionId: string; reason: CloseReason; now: Date },
  metadata: Metadata = {},
): Promise<{ closed: boolean; position: string | undefined }> {
  const result = await handleCommand(
    store,
    pairingStreamName(input.hubId),
    pairingDecider,
    { type: 'CloseWindow', sessionId: input.sessionId, reason: input.reason, at: input.now.toISOString() },
    { metadata },
  );
  return { closed: result.appended !== undefined, position: result.appended?.position };
}
