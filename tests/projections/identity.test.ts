import { expect } from 'chai';
import type { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import { createClient, revokeClient } from '../../src/identity/clients.js';
import { ClientSecretHasher } from '../../src/identity/secret-hash.js';
import { createProject } from '../../src/identity/projects.js';
import { catchUpProjector } from '../../src/projections/catch-up.js';
import { installProjector } from '../../src/projections/checkpoints.js';
import { identityProjector } from '../../src/projections/identity/projector.js';
import { listClients, recentlyRevokedClientIds } from '../../src/projections/identity/queries.js';
import type { TestDatabase } from '../support/database.js';
import { closeEventStore, openEventStore } from '../support/event-store.js';

describe('identity read model', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  beforeEach(async () => {
    ({ db, store } = await openEventStore({ idlePollMs: 50 }));
  });
  afterEach(async () => {
    await closeEventStore({ db, store });
  });

  it('lists clients without secrets, marks revocations, and is unchanged by a replay', async () => {
    const projector = identityProjector();
    const { projectId } = await createProject(store, { name: 'Acme' });
    const kept = await createClient(store, new ClientSecretHasher(db.pool), {
      projectId,
      scopes: ['devices:read'],
      name: 'kept',
    });
    const revoked = await createClient(store, new ClientSecretHasher(db.pool), {
      projectId,
      scopes: ['catalog:read'],
      authMethod: 'basic',
    });
    const { position } = await revokeClient(store, revoked.clientId);
    await catchUpProjector(db.pool, store, projector, 2000, position);

    const listed = await listClients(db.pool, projectId);
    expect(listed.map((c) => [c.clientId, c.name, c.authMethod, c.revokedAt === null])).to.deep.equal([
      [kept.clientId, 'kept', 'post', true],
      [revoked.clientId, null, 'basic', false],
    ]);
    expect(JSON.stringify(listed)).not.to.contain('scrypt');
    expect(await recentlyRevokedClientIds(db.pool, 3600)).to.deep.equal([revoked.clientId]);

    const everything = (await store.readAll({ maxCount: 100 })).events;
    const client = await db.pool.connect();
    try {
      await projector.apply(everything, client);
    } finally {
      client.release();
    }
    expect(await listClients(db.pool, projectId)).to.deep.equal(listed);
  });

  it('reports no revocations while its tables do not exist yet', async () => {
    expect(await recentlyRevokedClientIds(db.pool, 3600)).to.deep.equal([]);
    await installProjector(db.pool, identityProjector());
    expect(await recentlyRevokedClientIds(db.pool, 3600)).to.deep.equal([]);
  });
});
