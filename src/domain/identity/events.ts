import { z } from 'zod';
import { defineEvent, type DomainEvent } from '../events/definition.js';
import { SCOPES } from './scopes.js';

/** A stored secret hash in PHC string form: `$scrypt$ln=..,r=..,p=..$salt$hash` (never the secret). */
export const secretHashSchema = z
  .string()
  .regex(/^\$scrypt\$ln=\d+,r=\d+,p=\d+\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$/);

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

export const identityEvents = [ProjectCreated, ClientCreated, ClientRevoked] as const;

export type ProjectEvent = DomainEvent<typeof ProjectCreated>;
export type ClientEvent = DomainEvent<typeof ClientCreated> | DomainEvent<typeof ClientRevoked>;
