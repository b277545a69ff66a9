import { createSite } from '../../registry/sites.js';
import { withCliContext } from '../context.js';
import type { Output } from '../output.js';
import { cliRefusal } from './projects.js';

export async function siteCreate(out: Output, site: { projectId: string; name: string; timezone: string }) {
  await withCliContext(async ({ store }) => {
    const { siteId } = await createSite(store, site, { source: 'devcloud-cli' }).catch(cliRefusal);
    out.result({ siteId }, siteId);
  });
}
