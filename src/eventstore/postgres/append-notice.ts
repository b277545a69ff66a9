import { encodePgPosition } from './position.js';

/**
 * What an append notification says (functions/notify_append.sql): where the appending transaction's events
 * start, and their types.
 */
export interface AppendNotice {
  /** The lowest position the transaction's events can have; undefined when the payload names no transaction. */
  readonly committedFrom: string | undefined;
  /** The event types it appended; undefined when not named (then it may concern anyone). */
  readonly eventTypes: ReadonlySet<string> | undefined;
}

const PAYLOAD = /^([0-9]{1,20})(?::(.+))?$/s;

export function parseAppendNotice(payload: string | undefined): AppendNotice {
  const match = PAYLOAD.exec(payload ?? '');
  if (!match) return { committedFrom: undefined, eventTypes: undefined };
  return {
    committedFrom: encodePgPosition(match[1]!, 0n),
    eventTypes: match[2] === undefined ? undefined : new Set(match[2].split(',')),
  };
}

/** Whether a subscriber following `followed` types (all when undefined) has anything to read after `notice`. */
export function concerns(notice: AppendNotice, followed: readonly string[] | undefined): boolean {
  if (followed === undefined || notice.eventTypes === undefined) return true;
  return followed.some((type) => notice.eventTypes!.has(type));
}
