import { authMethodSchema, projectIdSchema, SCOPES } from '../../domain/identity/index.js';
import { InvalidInput, NotFound } from '../../domain/errors.js';
import { createClient, revokeClient } from '../../identity/clients.js';
import { ClientSecretHasher } from '../../identity/secret-hash.js';
import { loadProject } from '../../identity/projects.js';
import { catchUpProjector } from '../../projections/catch-up.js';
import { identityProjector } from '../../projections/identity/projector.js';
import { listClients } from '../../projections/identity/queries.js';
import { withCliContext } from '../context.js';
import { CliError, type Output } from '../output.js';

const METADATA = { source: 'devcloud-cli' };

export async function clientCreate(
  out: Output,
  options: { project: string; scopes: string; auth?: string; name?: string },
): Promise<void> {
  const auth = authMethodSchema.safeParse(options.auth ?? 'post');
  if (!auth.success) throw new CliError(`client create: --auth must be post or basic`);
  const scopes = options.scopes.split(/[\s,]+/).filter(Boolean);
  await withCliContext(async ({ store, database }) => {
    const client = await createClient(
      store,
      new ClientSecretHasher(database.pool),
      { projectId: options.project, scopes, authMethod: auth.data, name: options.name },
      METADATA,
    ).catch((error: unknown) => {
      if (error instanceof NotFound) throw new CliError(`no project ${options.project}`);
      if (error instanceof InvalidInput) {
        throw new CliError(
          error.field === 'scopes' ? `${error.reason}; known scopes: ${SCOPES.join(' ')}` : error.reason,
        );
      }
      throw error;
    });
    out.result(
      {
        clientId: client.clientId,
        clientSecret: client.clientSecret,
        scopes: client.scopes,
        authMethod: client.authMethod,
      },
      [
        `client id:     ${client.clientId}`,
        `client secret: ${client.clientSecret}`,
        `scopes:        ${client.scopes.join(' ')}`,
        `auth method:   ${client.authMethod}`,
        'The secret is shown only now; only a hash of it is stored.',
      ].join('\n'),
    );
  });
}

/** Lists a project's clients from the identity read model; secrets and their hashes are never in it. */
export async function clientList(out: Output, projectId: string): Promise<void> {
  await withCliContext(async ({ database, store }) => {
    const known =
      projectIdSchema.safeParse(projectId).success && (await loadProject(store, projectId)).exists;
    if (!known) throw new CliError(`no project ${projectId}`);
    await catchUpProjector(database.pool, store, identityProjector());
    const clients = await listClients(database.pool, projectId);
    out.result(
      { projectId, clients },
      clients
        .map(
          (c) =>
            `${c.clientId}  ${c.revokedAt ? 'revoked' : 'active '}  ${c.authMethod.padEnd(5)}  ${c.scopes.join(' ')}${c.name ? `  (${c.name})` : ''}`,
        )
        .join('\n') || 'no clients',
    );
  });
}

export async function clientRevoke(out: Output, clientId: string | undefined): Promise<void> {
  if (!clientId) throw new CliError('client revoke: the client id is required');
  await withCliContext(async ({ store }) => {
    const revoked = await revokeClient(store, clientId, METADATA).catch((error: unknown) => {
      if (error instanceof NotFound) throw new CliError(`no client ${clientId}`);
      throw error;
    });
    out.result(
      { clientId: revoked.clientId, projectId: revoked.projectId, revoked: true },
      `${clientId} revoked`,
    );
  });
}
