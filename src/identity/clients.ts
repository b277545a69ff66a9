import { fold } from '../domain/decider.js';
import { NotFound } from '../domain/errors.js';
import {
  clientDecider,
  clientIdSchema,
  clientStream,
  projectIdSchema,
  type ClientAuthMethod,
  type ClientEvent,
  type ClientState,
  type ScopeName,
} from '../domain/identity/index.js';
import { handleCommand } from '../eventstore/handle-command.js';
import type { EventStore } from '../eventstore/port.js';
import { newClientId, newClientSecret } from './ids.js';
import { loadProject } from './projects.js';
import type { ClientSecretHasher } from './secret-hash.js';

export interface CreatedClient {
  readonly clientId: string;
  /** Shown once to whoever created the client; only its keyed hash is recorded. */
  readonly clientSecret: string;
  readonly scopes: readonly ScopeName[];
  readonly authMethod: ClientAuthMethod;
  readonly position: string | undefined;
}

/**
 * Creates an OAuth client of a project. The id and secret are generated here (the domain stays free of
 * randomness); an unknown project or scope is refused by the client decider.
 */
export async function createClient(
  store: EventStore,
  hasher: ClientSecretHasher,
  input: { projectId: string; scopes: readonly string[]; authMethod?: ClientAuthMethod; name?: string },
  metadata: Record<string, unknown> = {},
): Promise<CreatedClient> {
  const clientId = newClientId();
  const clientSecret = newClientSecret();
  // A malformed id cannot name a project, and must not reach the event store as part of a stream name.
  const project = projectIdSchema.safeParse(input.projectId).success
    ? await loadProject(store, input.projectId)
    : { exists: false };
  const result = await handleCommand(
    store,
    clientStream(clientId),
    clientDecider,
    {
      type: 'CreateClient',
      clientId,
      projectId: input.projectId,
      projectExists: project.exists,
      scopes: input.scopes,
      authMethod: input.authMethod ?? 'post',
      secretHash: await hasher.hash(clientSecret),
      ...(input.name === undefined ? {} : { name: input.name }),
    },
    { metadata },
  );
  const state = result.state as Exclude<ClientState, { status: 'none' }>;
  return {
    clientId,
    clientSecret,
    scopes: state.scopes,
    authMethod: state.authMethod,
    position: result.appended?.position,
  };
}

/** Revokes a client; revoking a revoked client is a no-op, an unknown one a NotFound. */
export async function revokeClient(
  store: EventStore,
  clientId: string,
  metadata: Record<string, unknown> = {},
): Promise<{ clientId: string; projectId: string; position: string | undefined }> {
  if (!clientIdSchema.safeParse(clientId).success) throw new NotFound('client');
  const result = await handleCommand(
    store,
    clientStream(clientId),
    clientDecider,
    { type: 'RevokeClient', clientId },
    { metadata },
  );
  const state = result.state as Exclude<ClientState, { status: 'none' }>;
  return { clientId, projectId: state.projectId, position: result.appended?.position };
}

/** The client as its own stream tells it, so a creation or a revocation counts from the moment it is stored. */
export async function loadClient(store: EventStore, clientId: string): Promise<ClientState> {
  const events = await store.readStream(clientStream(clientId));
  return fold(
    clientDecider,
    events.map((e) => ({ type: e.type, data: e.data }) as ClientEvent),
  );
}
