import { defineCommand, JSON_OUTPUT, type CommandGroup } from '../command.js';

export const projectionsCommands: CommandGroup = {
  name: 'projections',
  summary: 'the read models: where each projector has got to, and rebuilding them from the event store',
  subcommands: [
    defineCommand({
      name: 'status',
      summary: 'where each projector has got to',
      options: JSON_OUTPUT,
      run: async ({ out }) => (await import('../commands/projections.js')).projectionsStatus(out),
    }),
    defineCommand({
      name: 'rebuild',
      args: ['[NAME]'],
      summary: 'rebuild read models from the event store',
      details:
        'Without NAME: every read model the events still in the store can rebuild. A progress bar on a ' +
        'terminal, JSON progress lines with --json.',
      options: JSON_OUTPUT,
      run: async ({ out, args }) =>
        (await import('../commands/projections.js')).projectionsRebuild(out, args[0]),
    }),
    defineCommand({
      name: 'partition',
      args: ['NAME', 'COUNT'],
      summary: 'split a heavy projector (state, telemetry) into COUNT partitions, or back into one',
      details:
        'Stop every projector process first: the command refuses while one still projects NAME. Each ' +
        'current partition is brought to one common position, then the new partitions start from it, so ' +
        'no event is lost or applied twice. Start the projector processes again afterwards.',
      options: JSON_OUTPUT,
      run: async ({ out, args }) =>
        (await import('../commands/projections.js')).projectionsPartition(out, args[0]!, args[1]!),
    }),
  ],
};
