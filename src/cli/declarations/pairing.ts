import { defineCommand, JSON_OUTPUT, type CommandGroup } from '../command.js';

export const pairingCommands: CommandGroup = {
  name: 'pairing',
  summary: 'pairing devices with hubs (docs/pairing.md)',
  subcommands: [
    defineCommand({
      name: 'clear-rejection',
      summary: 'let a rejected device join the hub as a candidate again',
      options: {
        hub: { type: 'string', value: 'ID', required: true, help: 'the hub that rejected it' },
        ieee: {
          type: 'string',
          value: 'ADDR',
          required: true,
          help: 'its radio address: 0x and 16 hex digits',
        },
        ...JSON_OUTPUT,
      },
      run: async ({ out, values }) =>
        (await import('../commands/pairing.js')).clearRejectionCommand(out, values.hub!, values.ieee!),
    }),
  ],
};
