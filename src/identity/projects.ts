import { fold } from '../domain/decider.js';
import {
  projectDecider,
  projectStream,
  type ProjectEvent,
  type ProjectState,
} from '../domain/identity/index.js';
import { handleCommand } from '../eventstore/handle-command.js';
import type { EventStore } from '../eventstore/port.js';
import { newProjectId } from './ids.js';

/** Records a new project (tenant) and answers its id. */
export async function createProject(
  store: EventStore,
  input: { name: string },
  metadata: Record<string, unknown> = {},
): Promise<{ projectId: string; position: string | undefined }> {
  const projectId = newProjectId();
  const result = await handleCommand(
    store,
    projectStream(projectId),
    projectDecider,
    { type: 'CreateProject', projectId, name: input.name },
    { metadata },
  );
  return { projectId, position: result.appended?.position };
}

/** The project as its own stream tells it: always current, no read model in between. */
export async function loadProject(store: EventStore, projectId: string): Promise<ProjectState> {
  const events = await store.readStream(projectStream(projectId));
  return fold(
    projectDecider,
    events.map((e) => ({ type: e.type, data: e.data }) as ProjectEvent),
  );
}
