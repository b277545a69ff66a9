import { defineCommand, JSON_OUTPUT, type CommandGroup } from '../command.js';

export const siteCommands: CommandGroup = {
  name: 'site',
  summary: "a project's sites",
  subcommands: [
    defineCommand({
      name: 'create',
      summary: 'add a site (timezone e.g. Europe/Paris)',
      details: "Prints its id. Daily buckets of its devices' readings follow its timezone.",
      options: {
        project: { type: 'string', value: 'ID', required: true, help: 'the project' },
        name: { type: 'string', value: 'NAME', required: true, help: 'its name' },
        timezone: { type: 'string', value: 'IANA_TZ', required: true, help: 'its IANA timezone' },
        ...JSON_OUTPUT,
      },
      run: async ({ out, values }) =>
        (await import('../commands/sites.js')).siteCreate(out, {
          projectId: values.project!,
          name: values.name!,
          timezone: values.timezone!,
        }),
    }),
  ],
};
