import { readFileSync } from 'node:fs';
import { ClientCreated, ClientRevoked, ProjectCreated } from '../../domain/identity/index.js';
import type { RecordedEvent } from '../../eventstore/port.js';
import type { PoolClient } from '../../infra/postgres/pool.js';
import type { Projector } from '../projector.js';

const schemaSql = readFileSync(new URL('./schema.sql', import.meta.url), 'utf8');

// Every statement is safe to replay: a row already there is left as it is.
const INSERT_PROJECT = `
  INSERT INTO projects (project_id, name, created_at) VALUES ($1, $2, $3)
  ON CONFLICT (project_id) DO NOTHING`;
const INSERT_CLIENT = `
  INSERT INTO oauth_clients (client_id, project_id, name, scopes, auth_method, created_at)
  VALUES ($1, $2, $3, $4, $5, $6)
  ON CONFLICT (client_id) DO NOTHING`;
const REVOKE_CLIENT = `
  UPDATE oauth_clients SET revoked_at = coalesce(revoked_at, $2) WHERE client_id = $1`;

async function applyOne(event: RecordedEvent, db: PoolClient): Promise<void> {
  switch (event.type) {
    case ProjectCreated.type: {
      const data = ProjectCreated.schema.parse(event.data);
      await db.query(INSERT_PROJECT, [data.projectId, data.name, event.recordedAt]);
      return;
    }
    case ClientCreated.type: {
      const data = ClientCreated.schema.parse(event.data);
      await db.query(INSERT_CLIENT, [
        data.clientId,
        data.projectId,
        data.name ?? null,
        data.scopes,
        data.authMethod,
        event.recordedAt,
      ]);
      return;
    }
    case ClientRevoked.type: {
      const data = ClientRevoked.schema.parse(event.data);
      await db.query(REVOKE_CLIENT, [data.clientId, event.recordedAt]);
      return;
    }
  }
}

/** The `identity` read model: projects and OAuth clients for operators, and revocations for the API. */
export function identityProjector(): Projector {
  return {
    name: 'identity',
    version: 1,
    eventTypes: [ProjectCreated.type, ClientCreated.type, ClientRevoked.type],
    tables: ['projects', 'oauth_clients'],
    schemaSql,
    async apply(events, db) {
      for (const event of events) await applyOne(event, db);
    },
  };
}
