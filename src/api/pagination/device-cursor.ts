import type { DeviceFilter } from '../../projections/devices/queries.js';
import { keysetCursors } from './keyset-cursor.js';

/** The device list's cursor, sealed for one project and bound to the filters it was issued for. */
export function deviceCursors(keyFor: (name: string) => Promise<Buffer>) {
  return keysetCursors<DeviceFilter>(keyFor, {
    keyName: 'device-list',
    context: 'devices',
    filterParts: (f) => [f.status ?? null, f.productModel ?? null, f.siteId ?? null],
  });
}
