import type { CommandFilter } from '../../projections/commands/queries.js';
import { keysetCursors } from './keyset-cursor.js';

/** A device's command list cursor, sealed for one project and bound to the device and the filters. */
export function commandCursors(keyFor: (name: string) => Promise<Buffer>) {
  return keysetCursors<CommandFilter & { deviceId: string }>(keyFor, {
    keyName: 'command-list',
    context: 'commands',
    filterParts: (f) => [
      f.deviceId,
      f.status ?? null,
      f.from?.toISOString() ?? null,
      f.to?.toISOString() ?? null,
    ],
  });
}
