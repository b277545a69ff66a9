import { expect } from 'chai';
import type { Decider } from '../../src/domain/decider.js';
import { Conflict, InvalidInput, NotFound } from '../../src/domain/errors.js';
import { allEvents, eventDefinition } from '../../src/domain/events/index.js';
import {
  clientDecider,
  clientStream,
  effectiveScopes,
  identityEvents,
  parseScopeList,
  projectDecider,
  projectStream,
  SCOPES,
  type ClientCommand,
  type ClientEvent,
  type ProjectEvent,
} from '../../src/domain/identity/index.js';

/** given events, when a command, then the events it records or the refusal it throws. */
function specification<C, E, S>(decider: Decider<C, E, S>) {
  return (given: readonly E[]) => ({
    when: (command: C) => {
      const decide = () => decider.decide(command, given.reduce(decider.evolve, decider.initialState()));
      return {
        then: (expected: readonly E[]) => expect(decide()).to.deep.equal(expected),
        thenRefused: <T extends Error>(
          kind: new (...args: never[]) => T,
          check: (e: T) => void = () => {},
        ) => {
          let refusal: unknown;
          try {
            decide();
          } catch (error) {
            refusal = error;
          }
          expect(refusal).to.be.instanceOf(kind);
          check(refusal as T);
        },
      };
    },
  });
}

const PROJECT = 'prj_AAAAAAAAAAAAAAAAAAAAAA';
const CLIENT = 'cli_BBBBBBBBBBBBBBBBBBBBBB';
const HASH = '$scrypt$ln=15,r=8,p=1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g';

const projectCreated: ProjectEvent = { type: 'ProjectCreated', data: { projectId: PROJECT, name: 'Acme' } };
const clientCreated: ClientEvent = {
  type: 'ClientCreated',
  data: {
    clientId: CLIENT,
    projectId: PROJECT,
    scopes: ['devices:read', 'telemetry:read'],
    authMethod: 'basic',
    secretHash: HASH,
    name: 'billing',
  },
};
const clientRevoked: ClientEvent = { type: 'ClientRevoked', data: { clientId: CLIENT, projectId: PROJECT } };

const createClient = (overrides: Partial<Extract<ClientCommand, { type: 'CreateClient' }>> = {}) =>
  ({
    type: 'CreateClient',
    clientId: CLIENT,
    projectId: PROJECT,
    projectExists: true,
    scopes: ['telemetry:read', 'devices:read'],
    authMethod: 'basic',
    secretHash: HASH,
    name: 'billing',
    ...overrides,
  }) as const;

describe('identity: projects', () => {
  const given = specification(projectDecider);

  it('creates a project that does not exist yet', () => {
    given([]).when({ type: 'CreateProject', projectId: PROJECT, name: '  Acme ' }).then([projectCreated]);
  });

  it('refuses to create a project twice', () => {
    given([projectCreated])
      .when({ type: 'CreateProject', projectId: PROJECT, name: 'Acme' })
      .thenRefused(Conflict, (e) => expect(e.reason).to.equal('project_exists'));
  });

  it('refuses an empty or overlong name', () => {
    given([]).when({ type: 'CreateProject', projectId: PROJECT, name: '   ' }).thenRefused(InvalidInput);
    given([])
      .when({ type: 'CreateProject', projectId: PROJECT, name: 'x'.repeat(201) })
      .thenRefused(InvalidInput);
  });

  it('lives in its own stream', () => {
    expect(projectStream(PROJECT)).to.equal(`project-${PROJECT}`);
  });
});

describe('identity: OAuth clients', () => {
  const given = specification(clientDecider);

  it('creates a client of an existing project, its scopes in catalogue order', () => {
    given([]).when(createClient()).then([clientCreated]);
  });

  it('refuses a client of an unknown project', () => {
    given([])
      .when(createClient({ projectExists: false }))
      .thenRefused(NotFound, (e) => expect(e.what).to.equal('project'));
  });

  it('refuses a scope that is not in the catalogue, naming it', () => {
    given([])
      .when(createClient({ scopes: ['devices:read', 'devices:admin'] }))
      .thenRefused(InvalidInput, (e) => expect(e.reason).to.contain('devices:admin'));
  });

  it('refuses a client without scopes', () => {
    given([])
      .when(createClient({ scopes: [] }))
      .thenRefused(InvalidInput);
  });

  it('accepts the grant privileges and deduplicates', () => {
    given([])
      .when(createClient({ scopes: ['grants:revoke', 'grants:admin', 'grants:admin'], name: undefined }))
      .then([
        {
          type: 'ClientCreated',
          data: {
            clientId: CLIENT,
            projectId: PROJECT,
            scopes: ['grants:admin', 'grants:revoke'],
            authMethod: 'basic',
            secretHash: HASH,
          },
        },
      ]);
  });

  it('refuses to create the same client twice', () => {
    given([clientCreated]).when(createClient()).thenRefused(Conflict);
  });

  it('revokes an active client', () => {
    given([clientCreated]).when({ type: 'RevokeClient', clientId: CLIENT }).then([clientRevoked]);
  });

  it('records nothing when revoking a revoked client again', () => {
    given([clientCreated, clientRevoked]).when({ type: 'RevokeClient', clientId: CLIENT }).then([]);
  });

  it('refuses to revoke a client that does not exist', () => {
    given([]).when({ type: 'RevokeClient', clientId: CLIENT }).thenRefused(NotFound);
  });

  it('folds to the state the token endpoint checks', () => {
    const state = [clientCreated, clientRevoked].reduce(clientDecider.evolve, clientDecider.initialState());
    expect(state).to.deep.include({ status: 'revoked', authMethod: 'basic', projectId: PROJECT });
    expect(clientStream(CLIENT)).to.equal(`client-${CLIENT}`);
  });
});

describe('identity: scopes and events', () => {
  it('has the spec six scopes, the two command scopes and the two grant privileges', () => {
    expect(SCOPES).to.have.members([
      'devices:read',
      'devices:write',
      'telemetry:read',
      'telemetry:live',
      'catalog:read',
      'commands:read',
      'commands:write',
      'commands:high_risk',
      'grants:admin',
      'grants:revoke',
    ]);
  });

  it('grants:admin implies grants:revoke, not the other way round', () => {
    expect([...effectiveScopes(['grants:admin'])]).to.have.members(['grants:admin', 'grants:revoke']);
    expect([...effectiveScopes(['grants:revoke'])]).to.deep.equal(['grants:revoke']);
  });

  it('parses a space-separated scope list, reporting unknown names', () => {
    expect(parseScopeList('telemetry:read  devices:read devices:read')).to.deep.equal({
      scopes: ['devices:read', 'telemetry:read'],
      unknown: [],
    });
    expect(parseScopeList('devices:read admin').unknown).to.deep.equal(['admin']);
  });

  it('registers its events, whose schemas accept what the deciders record', () => {
    for (const definition of identityEvents) expect(allEvents).to.include(definition);
    for (const event of [projectCreated, clientCreated, clientRevoked]) {
      expect(eventDefinition(event.type)!.schema.safeParse(event.data).success, event.type).to.equal(true);
    }
    expect(
      eventDefinition('ClientCreated')!.schema.safeParse({ ...clientCreated.data, secretHash: 'plain' })
        .success,
    ).to.equal(false);
  });
});
