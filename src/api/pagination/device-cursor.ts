import { createHash } from 'node:crypto';
import type { DeviceFilter } from '../../projections/devices/queries.js';
import { queryProblem } from '../validation.js';
import { openCursor, sealCursor } from './sealed-cursor.js';

const KEY_NAME = 'device-list';

/**
 * The device list's cursor: the keyset position after the page, and a digest of the filters it was issued
 * for, sealed for one project. Reusing a cursor with other filters would silently skip or repeat devices,
 * so it is refused instead.
 */
export function deviceCursors(keyFor: (name: string) => Promise<Buffer>) {
  return {
    async seal(projectId: string, filter: DeviceFilter, after: bigint): Promise<string> {
      const payload = Buffer.alloc(8 + 16);
      payload.writeBigUInt64BE(after, 0);
      filterDigest(filter).copy(payload, 8);
      return sealCursor(await keyFor(KEY_NAME), context(projectId), payload);
    },

    /** The keyset position; a 400 invalid_query for a cursor this server did not issue for this list. */
    async open(projectId: string, filter: DeviceFilter, cursor: string): Promise<bigint> {
      const payload = openCursor(await keyFor(KEY_NAME), context(projectId), cursor);
      if (!payload || payload.length !== 24) throw queryProblem('invalid_cursor', 'cursor');
      if (!payload.subarray(8).equals(filterDigest(filter))) {
        throw queryProblem('cursor_filters_changed', 'cursor');
      }
      return payload.readBigUInt64BE(0);
    },
  };
}

const context = (projectId: string) => `devices\u0000${projectId}`;

function filterDigest(filter: DeviceFilter): Buffer {
  const canonical = JSON.stringify([
    filter.status ?? null,
    filter.productModel ?? null,
    filter.siteId ?? null,
  ]);
  return createHash('sha256').update(canonical, 'utf8').digest().subarray(0, 16);
}
