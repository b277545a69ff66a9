import { revokeSigningKey, rotateSigningKeys } from '../../identity/signing-keys.js';
import { defineCommand, JSON_OUTPUT, type CommandGroup } from '../command.js';
import { withCliContext } from '../context.js';
import { CliError, type Output } from '../output.js';

export const keysCommands: CommandGroup = {
  name: 'keys',
  summary: 'the keys that sign access tokens',
  subcommands: [
    defineCommand({
      name: 'rotate',
      summary: 'sign access tokens with a new key',
      details: 'Tokens signed by the old key stay valid until they expire.',
      options: JSON_OUTPUT,
      run: ({ out }) => keysRotate(out),
    }),
    defineCommand({
      name: 'revoke',
      args: ['KID'],
      summary: 'emergency: tokens signed by KID stop within 10 s',
      // A key id is a base64url thumbprint: one in 64 begins with '-', which would read as an option.
      details: 'A KID that begins with - goes after --, as in: devcloud keys revoke -- -Kq3…',
      options: JSON_OUTPUT,
      run: ({ out, args }) => keysRevoke(out, args[0]),
    }),
  ],
};

/** Starts signing with a new key; running servers switch within their key-cache refresh (10 s). */
async function keysRotate(out: Output): Promise<void> {
  await withCliContext(async ({ config, database }) => {
    const rotation = await rotateSigningKeys(database.pool, config.SIGNING_KEY_ENCRYPTION_KEY);
    out.result(
      { kid: rotation.kid, retired: rotation.retired, pruned: rotation.pruned },
      `signing with ${rotation.kid}; retired ${rotation.retired.join(', ') || 'none'}; pruned ${rotation.pruned.length}`,
    );
  });
}

/** Emergency revoke of a leaked key: every server refuses its tokens within its key-cache refresh (10 s). */
async function keysRevoke(out: Output, kid: string | undefined): Promise<void> {
  if (!kid) throw new CliError('keys revoke: the key id (kid) is required');
  await withCliContext(async ({ database }) => {
    const { revoked } = await revokeSigningKey(database.pool, kid);
    if (!revoked) throw new CliError(`no signing key ${kid}`);
    out.result({ kid, revoked }, `revoked ${kid}: its tokens stop verifying within 10 s`);
  });
}
