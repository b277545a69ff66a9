import { CliError, type Output } from '../output.js';
import { clientCreate, clientList, clientRevoke } from './clients.js';
import { keysRevoke, keysRotate } from './keys.js';
import { projectCreate } from './projects.js';

export const IDENTITY_USAGE = `  project create --name NAME                        create a project (tenant)
  client create --project ID --scopes "S1 S2" [--auth post|basic] [--name N]
                                                    create an OAuth client; its secret is shown once
  client list --project ID                          a project's clients (never secrets)
  client revoke CLIENT_ID                           revoke a client and its tokens
  keys rotate                                       sign access tokens with a new key
  keys revoke KID                                   emergency: tokens signed by KID stop within 10 s`;

export interface IdentityOptions {
  readonly name?: string;
  readonly project?: string;
  readonly scopes?: string;
  readonly auth?: string;
}

/** `devcloud project|client|keys …` */
export function identityCommand(
  out: Output,
  command: 'project' | 'client' | 'keys',
  sub: string | undefined,
  arg: string | undefined,
  options: IdentityOptions,
): Promise<void> {
  const action = `${command} ${sub ?? ''}`.trim();
  switch (action) {
    case 'project create':
      return projectCreate(out, options);
    case 'client create':
      return clientCreate(out, options);
    case 'client list':
      return clientList(out, options);
    case 'client revoke':
      return clientRevoke(out, arg);
    case 'keys rotate':
      return keysRotate(out);
    case 'keys revoke':
      return keysRevoke(out, arg);
    default:
      throw new CliError(`unknown command ${action}; see devcloud --help`);
  }
}
