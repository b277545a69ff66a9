import type { PeerCertificate } from 'node:tls';

/**
 * An agent id is what the broker trusts: it is the certificate's subject CN, its URI SAN, the MQTT
 * client id and a topic level. The character set keeps it safe in all four places (no DN escaping, no
 * MQTT wildcards or separators).
 */
const AGENT_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

export function isAgentId(value: string): boolean {
  return AGENT_ID_PATTERN.test(value);
}

export function agentUri(agentId: string): string {
  return `urn:devcloud:agent:${agentId}`;
}

/**
 * Reads the agent id back from a verified TLS peer certificate. The CN alone is not enough: the broker's
 * own server certificate comes from the same CA, so an agent identity also needs the agent URI SAN that
 * only agent certificates carry, and both must name the same agent.
 */
export function agentIdFromCertificate(peer: PeerCertificate | undefined): string | undefined {
  if (!peer || !peer.subject) return undefined;
  // Node reports a repeated attribute as an array; an agent certificate has exactly one CN.
  const cn: unknown = peer.subject.CN;
  if (typeof cn !== 'string' || !isAgentId(cn)) return undefined;
  const uris = (peer.subjectaltname ?? '')
    .split(', ')
    .filter((name) => name.startsWith('URI:'))
    .map((name) => name.slice('URI:'.length));
  return uris.length === 1 && uris[0] === agentUri(cn) ? cn : undefined;
}
