/**
 * The scopes an OAuth client may hold and a token may carry. Six are the spec's; commands:read and
 * commands:write and the two grant privileges are ours (the spec leaves their names open and says revoking
 * needs less than granting).
 */
export const SCOPES = [
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
] as const;

export type ScopeName = (typeof SCOPES)[number];

/** A scope that brings others with it: whoever may enable write grants may also revoke them. */
const IMPLIES: Readonly<Partial<Record<ScopeName, readonly ScopeName[]>>> = {
  'grants:admin': ['grants:revoke'],
};

const known: ReadonlySet<string> = new Set(SCOPES);

export function isScope(value: string): value is ScopeName {
  return known.has(value);
}

/** The scopes held, plus every scope they imply. */
export function effectiveScopes(held: Iterable<ScopeName>): Set<ScopeName> {
  const result = new Set<ScopeName>();
  for (const scope of held) {
    result.add(scope);
    for (const implied of IMPLIES[scope] ?? []) result.add(implied);
  }
  return result;
}

/** Deduplicated, in catalogue order, so the same set always reads the same. */
export function canonicalScopes(scopes: Iterable<ScopeName>): ScopeName[] {
  const set = new Set(scopes);
  return SCOPES.filter((s) => set.has(s));
}

/**
 * Splits a space-separated scope string (RFC 6749 §3.3) into known scopes. Repeated separators are
 * tolerated; the answer lists the names that are not scopes at all, so callers can refuse them.
 */
export function parseScopeList(text: string): { scopes: ScopeName[]; unknown: string[] } {
  const scopes: ScopeName[] = [];
  const unknown: string[] = [];
  for (const word of text.split(' ').filter(Boolean)) {
    if (isScope(word)) scopes.push(word);
    else unknown.push(word);
  }
  return { scopes: canonicalScopes(scopes), unknown };
}
