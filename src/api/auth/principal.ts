/**
 * Who is calling: an OAuth client of one project, with the scopes its access token carries. Every read and
 * write is scoped to `projectId`; nothing in a request body or query can widen it.
 */
export const SPEC_SCOPES = [
  'devices:read',
  'devices:write',
  'telemetry:read',
  'telemetry:live',
  'catalog:read',
  'commands:high_risk',
] as const;

export type Scope = string;

export interface Principal {
  readonly projectId: string;
  readonly clientId: string;
  readonly scopes: ReadonlySet<Scope>;
  /** The access token's jti, for logs and audit metadata. */
  readonly tokenId: string;
}

declare module 'express-serve-static-core' {
  interface Request {
    /** Set by the authenticate middleware; routes behind it may rely on it. */
    principal?: Principal;
  }
}
