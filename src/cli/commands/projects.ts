import { DomainError } from '../../domain/errors.js';
import { createProject } from '../../identity/projects.js';
import { withCliContext } from '../context.js';
import { CliError, type Output } from '../output.js';

export async function projectCreate(out: Output, name: string): Promise<void> {
  await withCliContext(async ({ store }) => {
    const { projectId } = await createProject(store, { name }, { source: 'devcloud-cli' }).catch(cliRefusal);
    out.result({ projectId }, projectId);
  });
}

/** A domain refusal becomes the CLI's one-line error; anything else stays a failure. */
export function cliRefusal(error: unknown): never {
  if (error instanceof DomainError) throw new CliError(error.message);
  throw error;
}
