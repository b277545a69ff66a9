import { defineCommand, JSON_OUTPUT, type CommandGroup } from '../command.js';

export const keysCommands: CommandGroup = {
  name: 'keys',
  summary: 'the keys that sign access tokens',
  subcommands: [
    defineCommand({
      name: 'rotate',
      summary: 'sign access tokens with a new key',
      details: 'Tokens signed by the old key stay valid until they expire.',
      options: JSON_OUTPUT,
      run: async ({ out }) => (await import('../commands/keys.js')).keysRotate(out),
    }),
    defineCommand({
      name: 'revoke',
      args: ['KID'],
      summary: 'emergency: tokens signed by KID stop within 10 s',
      // A key id is a base64url thumbprint: one in 64 begins with '-', which would read as an option.
      details: 'A KID that begins with - goes after --, as in: devcloud keys revoke -- -Kq3…',
      options: JSON_OUTPUT,
      run: async ({ out, args }) => (await import('../commands/keys.js')).keysRevoke(out, args[0]),
    }),
  ],
};
