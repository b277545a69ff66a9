import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { Conflict, InvalidInput, NotFound } from '../../src/domain/errors.js';
import { allEvents, eventDefinition } from '../../src/domain/events/index.js';
import * as identity from '../../src/domain/identity/index.js';
import { given } from '../support/decider-spec.js';

const PROJECT = 'prj_AAAAAAAAAAAAAAAAAAAAAA';
const CLIENT = 'cli_BBBBBBBBBBBBBBBBBBBBBB';
const HASH = '$scrypt$ln=15,r=8,p=1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g';

const projectCreated: identity.ProjectEvent = {
  type: 'ProjectCreated',
  data: { projectId: PROJECT, name: 'Acme' },
};
const clientCreated: identity.ClientEvent = {
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
const clientRevoked: identity.ClientEvent = {
  type: 'ClientRevoked',
  data: { clientId: CLIENT, projectId: PROJECT },
};

const createClient = (overrides: Partial<Extract<identity.ClientCommand, { type: 'CreateClient' }>> = {}) =>
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
  it('creates a project that does not exist yet', () => {
    given(identity.projectDecider, [])
      .when({ type: 'CreateProject', projectId: PROJECT, name: '  Acme ' })
      .then([projectCreated]);
  });

  it('refuses to create a project twice', () => {
    given(identity.projectDecider, [projectCreated])
      .when({ type: 'CreateProject', projectId: PROJECT, name: 'Acme' })
      .thenFails(Conflict, (e) => expect(e.reason).to.equal('project_exists'));
  });

  it('refuses an empty or overlong name', () => {
    given(identity.projectDecider, [])
      .when({ type: 'CreateProject', projectId: PROJECT, name: '   ' })
      .thenFails(InvalidInput);
    given(identity.projectDecider, [])
      .when({ type: 'CreateProject', projectId: PROJECT, name: 'x'.repeat(201) })
      .thenFails(InvalidInput);
  });

  it('lives in its own stream', () => {
    expect(identity.projectStream(PROJECT)).to.equal(`project-${PROJECT}`);
  });
});

describe('identity: OAuth clients', () => {
  it('creates a client of an existing project, its scopes in catalogue order', () => {
    given(identity.clientDecider, []).when(createClient()).then([clientCreated]);
  });

  it('refuses a client of an unknown project', () => {
    given(identity.clientDecider, [])
      .when(createClient({ projectExists: false }))
      .thenFails(NotFound, (e) => expect(e.what).to.equal('project'));
  });

  it('refuses a scope that is not in the catalogue, naming it', () => {
    given(identity.clientDecider, [])
      .when(createClient({ scopes: ['devices:read', 'devices:admin'] }))
      .thenFails(InvalidInput, (e) => expect(e.reason).to.contain('devices:admin'));
  });

  it('refuses a client without scopes', () => {
    given(identity.clientDecider, [])
      .when(createClient({ scopes: [] }))
      .thenFails(InvalidInput);
  });

  it('accepts the grant privileges and deduplicates', () => {
    given(identity.clientDecider, [])
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
    given(identity.clientDecider, [clientCreated]).when(createClient()).thenFails(Conflict);
  });

  it('revokes an active client', () => {
    given(identity.clientDecider, [clientCreated])
      .when({ type: 'RevokeClient', clientId: CLIENT })
      .then([clientRevoked]);
  });

  it('records nothing when revoking a revoked client again', () => {
    given(identity.clientDecider, [clientCreated, clientRevoked])
      .when({ type: 'RevokeClient', clientId: CLIENT })
      .then([]);
  });

  it('refuses to revoke a client that does not exist', () => {
    given(identity.clientDecider, []).when({ type: 'RevokeClient', clientId: CLIENT }).thenFails(NotFound);
  });

  it('folds to the state the token endpoint checks', () => {
    const state = [clientCreated, clientRevoked].reduce(
      identity.clientDecider.evolve,
      identity.clientDecider.initialState(),
    );
    expect(state).to.deep.include({ status: 'revoked', authMethod: 'basic', projectId: PROJECT });
    expect(identity.clientStream(CLIENT)).to.equal(`client-${CLIENT}`);
  });
});

/** The table clients read (docs/api.md, "Scopes"): each scope, and whether its row calls it ours or the spec's. */
function documentedScopes(): { scope: string; ours: boolean }[] {
  const doc = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('\n## Scopes\n'), doc.indexOf('\n## Errors\n'));
  return [...section.matchAll(/^\| `([^`]+)` +\| (.+) \|$/gm)].map(([, scope, grants]) => ({
    scope: scope!,
    ours: grants!.startsWith('**ours.**'),
  }));
}

describe('identity: scopes and events', () => {
  it('has the spec six scopes, the two command scopes and the two grant privileges', () => {
    const documented = documentedScopes();
    expect(identity.SCOPES).to.have.length(10);
    expect(identity.SCOPES).to.have.members(documented.map((row) => row.scope));
    expect(documented.filter((row) => !row.ours)).to.have.length(6);
    expect(documented.filter((row) => row.ours).map((row) => row.scope)).to.have.members([
      'commands:read',
      'commands:write',
      'grants:admin',
      'grants:revoke',
    ]);
  });

  it('grants:admin implies grants:revoke, not the other way round', () => {
    expect([...identity.effectiveScopes(['grants:admin'])]).to.have.members([
      'grants:admin',
      'grants:revoke',
    ]);
    expect([...identity.effectiveScopes(['grants:revoke'])]).to.deep.equal(['grants:revoke']);
  });

  it('parses a space-separated scope list, reporting unknown names', () => {
    expect(identity.parseScopeList('telemetry:read  devices:read devices:read')).to.deep.equal({
      scopes: ['devices:read', 'telemetry:read'],
      unknown: [],
    });
    expect(identity.parseScopeList('devices:read admin').unknown).to.deep.equal(['admin']);
  });

  it('registers its events, whose schemas accept what the deciders record', () => {
    for (const definition of identity.identityEvents) expect(allEvents).to.include(definition);
    for (const event of [projectCreated, clientCreated, clientRevoked]) {
      expect(eventDefinition(event.type)!.schema.safeParse(event.data).success, event.type).to.equal(true);
    }
    expect(
      eventDefinition('ClientCreated')!.schema.safeParse({ ...clientCreated.data, secretHash: 'plain' })
        .success,
    ).to.equal(false);
  });
});
