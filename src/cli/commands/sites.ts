import { createSite } from '../../registry/sites.js';
import { defineCommand, JSON_OUTPUT, type CommandGroup } from '../command.js';
import { withCliContext } from '../context.js';
import type { Output } from '../output.js';
import { cliRefusal } from './projects.js';

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
      run: ({ out, values }) =>
        siteCreate(out, { projectId: values.project!, name: values.name!, timezone: values.timezone! }),
    }),
  ],
};

async function siteCreate(out: Output, site: { projectId: string; name: string; timezone: string }) {
  await withCliContext(async ({ store }) => {
    const { siteId } = await createSite(store, site, { source: 'devcloud-cli' }).catch(cliRefusal);
    out.result({ siteId }, siteId);
  });
}
