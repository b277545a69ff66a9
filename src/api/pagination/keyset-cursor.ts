import { createHash } from 'node:crypto';
import { queryProblem } from '../validation.js';
import { openCursor, sealCursor } from './sealed-cursor.js';

/**
 * A list's cursor: the keyset position after the page, and a digest of the filters it was issued for,
 * sealed for one project under the list's own key. Reusing a cursor with other filters would silently skip
 * or repeat items, so it is refused instead (400 cursor_filters_changed).
 */
export function keysetCursors<Filter>(
  keyFor: (name: string) => Promise<Buffer>,
  list: { keyName: string; context: string; filterParts: (filter: Filter) => readonly unknown[] },
) {
  const context = (projectId: string) => `${list.context}\u0000${projectId}`;
  const digest = (filter: Filter) =>
    createHash('sha256')
      .update(JSON.stringify(list.filterParts(filter)), 'utf8')
      .digest()
      .subarray(0, 16);
  return {
    async seal(projectId: string, filter: Filter, after: bigint): Promise<string> {
      const payload = Buffer.alloc(8 + 16);
      payload.writeBigUInt64BE(after, 0);
      digest(filter).copy(payload, 8);
      return sealCursor(await keyFor(list.keyName), context(projectId), payload);
    },

    /** The keyset position; a 400 invalid_query for a cursor this server did not issue for this list. */
    async open(projectId: string, filter: Filter, cursor: string): Promise<bigint> {
      const payload = openCursor(await keyFor(list.keyName), context(projectId), cursor);
      if (!payload || payload.length !== 24) throw queryProblem('invalid_cursor', 'cursor');
      if (!payload.subarray(8).equals(digest(filter))) throw queryProblem('cursor_filters_changed', 'cursor');
      return payload.readBigUInt64BE(0);
    },
  };
}
