import { DEVICE_STATUSES } from '../../domain/devices/lifecycle.js';
import { defineCommand, JSON_OUTPUT, type CommandGroup } from '../command.js';

const DEVICE_OPTIONS = {
  reason: { type: 'string', value: 'TEXT', help: 'why, recorded with the event (1 to 500 characters)' },
  ...JSON_OUTPUT,
} as const;

export const deviceCommands: CommandGroup = {
  name: 'device',
  summary: 'operator moves of a device (docs/commands.md)',
  subcommands: [
    defineCommand({
      name: 'profile',
      args: ['PUBLIC_ID', 'verified|draft'],
      summary: "verify a device's catalogue profile, or downgrade it",
      details: 'A downgrade revokes its S2/S3 grants and cancels their pending commands.',
      options: DEVICE_OPTIONS,
      run: async ({ out, args: [deviceId, target], values }) =>
        (await import('../commands/device.js')).deviceMove(out, 'profile', deviceId, target, values),
    }),
    defineCommand({
      name: 'status',
      args: ['PUBLIC_ID', DEVICE_STATUSES.join('|')],
      summary: 'move a device through its lifecycle (docs/commands.md)',
      details: 'Leaving active cancels its pending commands; a forbidden move exits 1.',
      options: DEVICE_OPTIONS,
      run: async ({ out, args: [deviceId, target], values }) =>
        (await import('../commands/device.js')).deviceMove(out, 'status', deviceId, target, values),
    }),
  ],
};
