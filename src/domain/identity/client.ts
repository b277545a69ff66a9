import type { Decider } from '../decider.js';
import { Conflict, InvalidInput, NotFound } from '../errors.js';
import type { ClientAuthMethod, ClientEvent } from './events.js';
import { canonicalScopes, isScope, type ScopeName } from './scopes.js';

/** An OAuth client: a service credential of one project, carrying the scopes it may be issued. */
export const clientStream = (clientId: string) => `client-${clientId}`;

const SCRYPT_PREFIX = '$scrypt$';

export type ClientCommand =
  | {
      readonly type: 'CreateClient';
      readonly clientId: string;
      readonly projectId: string;
      /** Projects are never deleted, so the caller's read of the project stream cannot go stale. */
      readonly projectExists: boolean;
      readonly scopes: readonly string[];
      readonly authMethod: ClientAuthMethod;
      readonly secretHash: string;
      readonly name?: string;
    }
  | { readonly type: 'RevokeClient'; readonly clientId: string }
  /** Records the same secret under a keyed hash; only ever replaces a scrypt hash, once. */
  | { readonly type: 'RehashClientSecret'; readonly clientId: string; readonly secretHash: string };

export type ClientState =
  | { readonly status: 'none' }
  | {
      readonly status: 'active' | 'revoked';
      readonly clientId: string;
      readonly projectId: string;
      readonly scopes: readonly ScopeName[];
      readonly authMethod: ClientAuthMethod;
      readonly secretHash: string;
      readonly name?: string;
    };

export const clientDecider: Decider<ClientCommand, ClientEvent, ClientState> = {
  initialState: () => ({ status: 'none' }),
  decide(command, state) {
    switch (command.type) {
      case 'CreateClient':
        return createClient(command, state);
      case 'RevokeClient':
        if (state.status === 'none') throw new NotFound('client');
        // Revoking twice changes nothing, so a retried revoke records nothing new.
        if (state.status === 'revoked') return [];
        return [{ type: 'ClientRevoked', data: { clientId: state.clientId, projectId: state.projectId } }];
      case 'RehashClientSecret':
        if (state.status === 'none') throw new NotFound('client');
        // Two servers migrating the same client at once: the second finds it done and records nothing.
        if (!state.secretHash.startsWith(SCRYPT_PREFIX)) return [];
        return [
          {
            type: 'ClientSecretRehashed',
            data: { clientId: state.clientId, projectId: state.projectId, secretHash: command.secretHash },
          },
        ];
    }
  },
  evolve(state, event) {
    switch (event.type) {
      case 'ClientCreated': {
        const { name, ...rest } = event.data;
        return { status: 'active', ...rest, ...(name === undefined ? {} : { name }) };
      }
      case 'ClientRevoked':
        return state.status === 'none' ? state : { ...state, status: 'revoked' };
      case 'ClientSecretRehashed':
        return state.status === 'none' ? state : { ...state, secretHash: event.data.secretHash };
    }
  },
};

function createClient(
  command: Extract<ClientCommand, { type: 'CreateClient' }>,
  state: ClientState,
): ClientEvent[] {
  if (state.status !== 'none') throw new Conflict('client_exists', { clientId: command.clientId });
  if (!command.projectExists) throw new NotFound('project');
  const unknown = command.scopes.filter((s) => !isScope(s));
  if (unknown.length > 0) throw new InvalidInput(`unknown scope ${unknown.join(', ')}`, 'scopes');
  const scopes = canonicalScopes(command.scopes.filter(isScope));
  if (scopes.length === 0) throw new InvalidInput('a client needs at least one scope', 'scopes');
  const name = command.name?.trim();
  if (name !== undefined && (name.length === 0 || name.length > 200)) {
    throw new InvalidInput('name must be 1 to 200 characters', 'name');
  }
  return [
    {
      type: 'ClientCreated',
      data: {
        clientId: command.clientId,
        projectId: command.projectId,
        scopes,
        authMethod: command.authMethod,
        secretHash: command.secretHash,
        ...(name === undefined ? {} : { name }),
      },
    },
  ];
}
