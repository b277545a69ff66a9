import {
  ANY,
  ErrorType,
  NO_STREAM,
  STREAM_EXISTS,
  jsonEvent,
  type AppendStreamRequest,
  type AppendStreamState,
  type CurrentStreamState,
  type EventData,
  type JSONType,
  type Position,
} from '@kurrent/kurrentdb-client';
import {
  EventStoreUnavailableError,
  WrongExpectedRevisionError,
  type ExpectedRevision,
  type NewEvent,
  type RecordedEvent,
  type StreamAppend,
} from '../port.js';
import { encodePosition } from './position.js';

/** The part of the client's recorded event we rely on (read, $all read and subscription shapes all have it). */
export interface ClientRecordedEvent {
  readonly streamId: string;
  readonly id: string;
  readonly type: string;
  readonly revision: bigint;
  readonly created: Date;
  readonly data: unknown;
  readonly metadata?: unknown;
  readonly position?: Position;
}

export interface ClientResolvedEvent {
  readonly event?: ClientRecordedEvent;
}

export function toStreamState(expected: ExpectedRevision): AppendStreamState {
  switch (expected) {
    case 'no_stream':
      return NO_STREAM;
    case 'stream_exists':
      return STREAM_EXISTS;
    case 'any':
      return ANY;
    default:
      // The client would send "-1" as a revision string, which the server reads as "no stream".
      if (expected < 0n) throw new RangeError(`expected revision must be >= 0, got ${expected}`);
      return expected;
  }
}

export function fromStreamState(state: AppendStreamState): ExpectedRevision {
  switch (state) {
    case NO_STREAM:
      return 'no_stream';
    case STREAM_EXISTS:
      return 'stream_exists';
    case ANY:
      return 'any';
    default:
      return state;
  }
}

function toActualRevision(current: CurrentStreamState): bigint | 'no_stream' {
  return current === NO_STREAM ? 'no_stream' : current;
}

export function toEventData(event: NewEvent): EventData {
  return jsonEvent({
    id: event.id,
    type: event.type,
    // The client types data as JSON-ish; it JSON.stringifies whatever it gets, like the Postgres adapter.
    data: event.data as JSONType,
    ...(event.metadata ? { metadata: { ...event.metadata } } : {}),
  });
}

/**
 * The multi-stream append carries metadata as string-valued properties only, so ours travels as one JSON
 * text under this key and is unpacked on reading (toRecordedEvent).
 */
const METADATA_PROPERTY = 'dc.metadata';

/** One stream's part of a multi-stream append (KurrentDB 25.1 and later). */
export function toAppendStreamRequest(append: StreamAppend): AppendStreamRequest {
  return {
    streamName: append.streamName,
    expectedState: toStreamState(append.expectedRevision),
    events: append.events.map((event) =>
      jsonEvent({
        id: event.id,
        type: event.type,
        data: event.data as JSONType,
        ...(event.metadata ? { metadata: { [METADATA_PROPERTY]: JSON.stringify(event.metadata) } } : {}),
      }),
    ),
  };
}

/**
 * The server has no multi-stream append (older than 25.1): gRPC UNIMPLEMENTED (12), which the client
 * passes on as an unknown error with that code, or the client's own "unsupported" refusal.
 */
export function isMultiStreamAppendUnsupported(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as { type?: unknown; code?: unknown };
  return e.type === ErrorType.UNSUPPORTED || e.code === 12;
}

/** System events ($metadata, $>, $statsCollected, ...) are the server's, never ours. */
export function isSystemEvent(event: ClientRecordedEvent): boolean {
  return event.type.startsWith('$');
}

export function toRecordedEvent(event: ClientRecordedEvent): RecordedEvent {
  if (!event.position) {
    // Only servers older than 22.6 omit positions on stream reads; the port cannot work without them.
    throw new Error(`KurrentDB returned event ${event.id} without a position (server older than 22.6?)`);
  }
  return {
    id: event.id,
    type: event.type,
    data: event.data,
    metadata: metadataOf(event.metadata),
    streamName: event.streamId,
    revision: event.revision,
    position: encodePosition(event.position),
    recordedAt: event.created,
  };
}

export function isStreamNotFound(error: unknown): boolean {
  return errorType(error) === ErrorType.STREAM_NOT_FOUND;
}

/** What the failed call was trying to do, so the port error can name the caller's stream and expectation. */
export interface AppendContext {
  readonly streamName: string;
  readonly expectedRevision: ExpectedRevision;
}

export function toPortError(error: unknown, append?: AppendContext): Error {
  if (errorType(error) === ErrorType.WRONG_EXPECTED_VERSION) {
    const e = error as {
      streamName: string;
      expectedState: AppendStreamState;
      actualState: CurrentStreamState;
    };
    return new WrongExpectedRevisionError(
      append?.streamName ?? e.streamName,
      append?.expectedRevision ?? fromStreamState(e.expectedState),
      toActualRevision(e.actualState),
    );
  }
  if (isUnavailable(error)) {
    const message = error instanceof Error ? error.message : String(error);
    return new EventStoreUnavailableError(`KurrentDB unavailable: ${message}`, { cause: error });
  }
  return error instanceof Error ? error : new Error(String(error));
}

const unavailableTypes = new Set<string>([
  ErrorType.UNAVAILABLE,
  ErrorType.DEADLINE_EXCEEDED,
  ErrorType.TIMEOUT,
  ErrorType.NOT_LEADER,
]);
const unavailableCodes = new Set<unknown>([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
]);
// gRPC status codes on errors the client did not convert: DEADLINE_EXCEEDED (4), UNAVAILABLE (14).
const unavailableGrpcCodes = new Set<unknown>([4, 14]);
// Discovery failures are plain Errors; the native read bridge reports transport failures as UnknownError.
const unavailableMessage =
  /failed to discover|connection refused|transport error|failed to connect|dns error/i;

function isUnavailable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as { type?: unknown; code?: unknown; message?: unknown };
  if (typeof e.type === 'string' && unavailableTypes.has(e.type)) return true;
  if (unavailableCodes.has(e.code) || unavailableGrpcCodes.has(e.code)) return true;
  return typeof e.message === 'string' && unavailableMessage.test(e.message);
}

// Compared by the client's `type` tag rather than instanceof, so a second copy of the client package
// (or a test double) is still recognised.
function errorType(error: unknown): unknown {
  return typeof error === 'object' && error !== null ? (error as { type?: unknown }).type : undefined;
}

function metadataOf(metadata: unknown): Record<string, unknown> {
  if (!isPlainObject(metadata)) return {};
  const packed = metadata[METADATA_PROPERTY];
  if (typeof packed !== 'string') return metadata;
  const unpacked: unknown = JSON.parse(packed);
  return isPlainObject(unpacked) ? unpacked : {};
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array)
  );
}
