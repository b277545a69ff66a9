import { revokeSigningKey, rotateSigningKeys } from '../../identity/signing-keys.js';
import { withCliContext } from '../context.js';
import { CliError, type Output } from '../output.js';

/** Starts signing with a new key; running servers switch within their key-cache refresh (10 s). */
export async function keysRotate(out: Output): Promise<void> {
  await withCliContext(async ({ config, database }) => {
    const rotation = await rotateSigningKeys(database.pool, config.SIGNING_KEY_ENCRYPTION_KEY);
    out.result(
      { kid: rotation.kid, retired: rotation.retired, pruned: rotation.pruned },
      `signing with ${rotation.kid}; retired ${rotation.retired.join(', ') || 'none'}; pruned ${rotation.pruned.length}`,
    );
  });
}

/** Emergency revoke of a leaked key: every server refuses its tokens within its key-cache refresh (10 s). */
export async function keysRevoke(out: Output, kid: string | undefined): Promise<void> {
  if (!kid) throw new CliError('keys revoke: the key id (kid) is required');
  await withCliContext(async ({ database }) => {
    const { revoked } = await revokeSigningKey(database.pool, kid);
    if (!revoked) throw new CliError(`no signing key ${kid}`);
    out.result({ kid, revoked }, `revoked ${kid}: its tokens stop verifying within 10 s`);
  });
}
