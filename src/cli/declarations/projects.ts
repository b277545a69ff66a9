import { defineCommand, JSON_OUTPUT, type CommandGroup } from '../command.js';

export const projectCommands: CommandGroup = {
  name: 'project',
  summary: 'projects (tenants)',
  subcommands: [
    defineCommand({
      name: 'create',
      summary: 'create a project (tenant)',
      details: 'Prints its id.',
      options: { name: { type: 'string', value: 'NAME', required: true, help: 'its name' }, ...JSON_OUTPUT },
      run: async ({ out, values }) =>
        (await import('../commands/projects.js')).projectCreate(out, values.name!),
    }),
  ],
};
