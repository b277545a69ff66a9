import { expect } from 'chai';
import { createClient, revokeClient } from '../../src/identity/clients.js';
import { ClientSecretHasher } from '../../src/identity/secret-hash.js';
import { createProject } from '../../src/identity/projects.js';
import { catchUpProjector } from '../../src/projections/catch-up.js';
import { installProjector } from '../../src/projections/checkpoints.js';
import { identityProjector } from '../../src/projections/identity/projector.js';
import { listClients, recentlyRevokedClientIds } from '../../src/projections/identity/queries.js';
import { eventStoreForEachTest } from '../support/event-store.js';

describe('identity read model', () => {
  const suite = eventStoreForEachTest({ idlePollMs: 50 });

  it('lists clients without secrets, marks revocations, and is unchanged by a replay', async () => {
    const projector = identityProjector();
    const { projectId } = await createProject(suite.store, { name: 'Acme' });
    const kept = await createClient(suite.store, new ClientSecretHasher(suite.db.pool), {
      projectId,
      scopes: ['devices:read'],
      name: 'kept',
    });
    const revoked = await createClient(suite.store, new ClientSecretHasher(suite.db.pool), {
      projectId,
      scopes: ['catalog:read'],
      authMethod: 'basic',
    });
    const { position } = await revokeClient(suite.store, revoked.clientId);
    await catchUpProjector(suite.db.pool, suite.store, projector, 2000, position);

    const listed = await listClients(suite.db.pool, projectId);
    expect(listed.map((c) => [c.clientId, c.name, c.authMethod, c.revokedAt === null])).to.deep.equal([
      [kept.clientId, 'kept', 'post', true],
      [revoked.clientId, null, 'basic', false],
    ]);
    expect(JSON.stringify(listed)).not.to.contain('scrypt');
    expect(await recentlyRevokedClientIds(suite.db.pool, 3600)).to.deep.equal([revoked.clientId]);

    const everything = (await suite.store.readAll({ maxCount: 100 })).events;
    const client = await suite.db.pool.connect();
    try {
      await projector.apply(everything, client);
    } finally {
      client.release();
    }
    expect(await listClients(suite.db.pool, projectId)).to.deep.equal(listed);
  });

  it('reports no revocations while its tables do not exist yet', async () => {
    expect(await recentlyRevokedClientIds(suite.db.pool, 3600)).to.deep.equal([]);
    await installProjector(suite.db.pool, identityProjector());
    expect(await recentlyRevokedClientIds(suite.db.pool, 3600)).to.deep.equal([]);
  });
});
