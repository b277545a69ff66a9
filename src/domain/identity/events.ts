import { z } from 'zod';
import { defineEvent, type DomainEvent } from '../events/definition.js';
import { SCOPES } from './scopes.js';

/**
 * A stored secret hash (never the secret): a keyed HMAC-SHA-256, `$hmac-sha256$k=KEY_ID$mac`, or, for
 * clients created before keyed hashes, scrypt in PHC string form, `$scrypt$ln=..,r=..,p=..$salt$hash`.
 */
const keyedSecretHashSchema = z.string().regex(/^\$hmac-sha256\$k=[A-Za-z0-9_-]{1,32}\$[A-Za-z0-9+/]+$/);
const secretHashSchema = z.union([
  keyedSecretHashSchema,
  z.string().regex(/^\$scrypt\$ln=\d+,r=\d+,p=\d+\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$/),
]);

export const projectIdSchema = z.string().regex(/^prj_[A-Za-z0-9_-]{8,64}$/);
export const clientIdSchema = z.string().regex(/^cli_[A-Za-z0-9_-]{8,64}$/);
export const authMethodSchema = z.enum(['post', 'basic']);
export type ClientAuthMethod = z.infer<typeof authMethodSchema>;

export const ProjectCreated = defineEvent(
  'ProjectCreated',
  z.object({ projectId: projectIdSchema, name: z.string().min(1).max(200) }),
);

export const ClientCreated = defineEvent(
  'ClientCreated',
  z.object({
    clientId: clientIdSchema,
    projectId: projectIdSchema,
    scopes: z.array(z.enum(SCOPES)),
    authMethod: authMethodSchema,
    secretHash: secretHashSchema,
    name: z.string().min(1).max(200).optional(),
  }),
);

export const ClientRevoked = defineEvent(
  'ClientRevoked',
  z.object({ clientId: clientIdSchema, projectId: projectIdSchema }),
);

/** The client's secret, unchanged, is recorded under a cheaper hash (a scrypt hash migrated to the keyed one). */
const ClientSecretRehashed = defineEvent(
  'ClientSecretRehashed',
  z.object({ clientId: clientIdSchema, projectId: projectIdSchema, secretHash: keyedSecretHashSchema }),
);

export const identityEvents = [ProjectCreated, ClientCreated, ClientRevoked, ClientSecretRehashed] as const;

export type ProjectEvent = DomainEvent<typeof ProjectCreated>;
export type ClientEvent =
  | DomainEvent<typeof ClientCreated>
  | DomainEvent<typeof ClientRevoked>
  | DomainEvent<typeof ClientSecretRehashed>;
