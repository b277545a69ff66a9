import { agentPrefix, parseUplinkTopic, type UplinkTopic } from './topics.js';

/** What an ACL decision needs to know about a connected agent. */
export interface AgentGrant {
  readonly agentId: string;
  /** Public ids the agent speaks for: its hub and the devices adopted through it. */
  readonly deviceIds: ReadonlySet<string>;
}

type PublishRefusal =
  /** `+` or `#` in a topic name: a protocol violation, not just a denial. */
  | 'wildcard'
  /** Anywhere outside `dc/v1/agents/<own id>/`: another agent, `$SYS`, the root. */
  | 'foreign_subtree'
  /** Inside its own subtree but not an uplink topic (its downlink topics, unknown shapes). */
  | 'not_uplink'
  /** `devices/<id>/...` for a device that is not the agent's. */
  | 'foreign_device';

export type PublishDecision =
  | { readonly allowed: true; readonly topic: UplinkTopic }
  | { readonly allowed: false; readonly reason: PublishRefusal };

export function mayPublish(agent: AgentGrant, topic: string): PublishDecision {
  if (topic.includes('+') || topic.includes('#')) return { allowed: false, reason: 'wildcard' };
  if (!topic.startsWith(agentPrefix(agent.agentId))) return { allowed: false, reason: 'foreign_subtree' };
  const parsed = parseUplinkTopic(topic);
  if (!parsed || parsed.agentId !== agent.agentId) return { allowed: false, reason: 'not_uplink' };
  if (
    (parsed.kind === 'readings' || parsed.kind === 'deviceStatus') &&
    !agent.deviceIds.has(parsed.deviceId)
  ) {
    return { allowed: false, reason: 'foreign_device' };
  }
  return { allowed: true, topic: parsed };
}

/**
 * An agent may subscribe to its own downlink subtree or anything narrower, and nothing else: not `#`,
 * not `+/...`, not `$SYS/...`, not `$share/...`, not another agent's subtree. Wildcards are only allowed
 * after the agent's own literal prefix, where they cannot reach past it.
 */
export function maySubscribe(agent: AgentGrant, topicFilter: string): boolean {
  const downPrefix = `${agentPrefix(agent.agentId)}down/`;
  if (!topicFilter.startsWith(downPrefix)) return false;
  const levels = topicFilter.slice(downPrefix.length).split('/');
  return levels.every((level, index) => {
    if (level === '+') return true;
    if (level === '#') return index === levels.length - 1;
    return !level.includes('+') && !level.includes('#');
  });
}
