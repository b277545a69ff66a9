import { projectStream } from '../domain/identity/index.js';
import { siteDecider, siteStreamName } from '../domain/sites/index.js';
import { handleCommand } from '../eventstore/handle-command.js';
import type { EventStore } from '../eventstore/port.js';
import { ianaTimezones } from '../infra/timezones.js';
import { newSiteId } from './ids.js';

const decider = siteDecider(ianaTimezones);

/** Records a new site of a project; refuses an unknown project or a timezone the tz database lacks. */
export async function createSite(
  store: EventStore,
  input: { projectId: string; name: string; timezone: string },
  metadata: Record<string, unknown> = {},
): Promise<{ siteId: string; position: string | undefined }> {
  const siteId = newSiteId();
  const projectExists = (await store.readStream(projectStream(input.projectId), { maxCount: 1 })).length > 0;
  const result = await handleCommand(
    store,
    siteStreamName(siteId),
    decider,
    { type: 'CreateSite', siteId, projectExists, ...input },
    { metadata },
  );
  return { siteId, position: result.appended?.position };
}
