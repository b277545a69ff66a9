import { rotateSigningKeys } from '../../identity/signing-keys.js';
import { withCliContext } from '../context.js';
import type { Output } from '../output.js';

/** Starts signing with a new key; running servers switch within their key-cache refresh (10 s). */
export async function keysRotate(out: Output): Promise<void> {
  await withCliContext(async ({ database }) => {
    const rotation = await rotateSigningKeys(database.pool);
    out.result(
      { kid: rotation.kid, retired: rotation.retired, pruned: rotation.pruned },
      `signing with ${rotation.kid}; retired ${rotation.retired.join(', ') || 'none'}; pruned ${rotation.pruned.length}`,
    );
  });
}
