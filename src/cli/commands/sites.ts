import { createSite } from '../../registry/sites.js';
import { withCliContext } from '../context.js';
import { CliError, type Output } from '../output.js';
import { cliRefusal } from './projects.js';

export const SITES_USAGE = `  site create --project ID --name NAME --timezone IANA_TZ
                                                    add a site (timezone e.g. Europe/Paris)`;

export async function siteCommand(
  out: Output,
  sub: string | undefined,
  options: { project?: string; name?: string; timezone?: string },
): Promise<void> {
  if (sub !== 'create') throw new CliError(`site: expected create, got ${sub ?? 'nothing'}`);
  const { project, name, timezone } = options;
  if (!project || !name || !timezone) {
    throw new CliError('site create: --project ID, --name NAME and --timezone IANA_TZ are required');
  }
  await withCliContext(async ({ store }) => {
    const { siteId } = await createSite(
      store,
      { projectId: project, name, timezone },
      { source: 'devcloud-cli' },
    ).catch(cliRefusal);
    out.result({ siteId }, siteId);
  });
}
