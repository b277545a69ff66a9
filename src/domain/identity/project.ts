import type { Decider } from '../decider.js';
import { Conflict, InvalidInput } from '../errors.js';
import type { ProjectEvent } from './events.js';

/** A project is the tenant: every device, site, binding and client belongs to exactly one. */
export const projectStream = (projectId: string) => `project-${projectId}`;

export type ProjectCommand = {
  readonly type: 'CreateProject';
  readonly projectId: string;
  readonly name: string;
};

export type ProjectState =
  { readonly exists: false } | { readonly exists: true; readonly projectId: string; readonly name: string };

export const projectDecider: Decider<ProjectCommand, ProjectEvent, ProjectState> = {
  initialState: () => ({ exists: false }),
  decide(command, state) {
    if (state.exists) throw new Conflict('project_exists', { projectId: state.projectId });
    const name = command.name.trim();
    if (name.length === 0 || name.length > 200)
      throw new InvalidInput('name must be 1 to 200 characters', 'name');
    return [{ type: 'ProjectCreated', data: { projectId: command.projectId, name } }];
  },
  evolve(_state, event) {
    return { exists: true, projectId: event.data.projectId, name: event.data.name };
  },
};
