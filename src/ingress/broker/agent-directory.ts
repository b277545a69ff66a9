/** The broker's view of an edge agent, as the registry knows it now. */
export interface AgentRecord {
  readonly agentId: string;
  readonly projectId: string;
  /** Public id of the hub (coordinator) the agent fronts. */
  readonly hubId: string;
  readonly revoked: boolean;
  /** Public ids the agent may publish for: its hub and every device adopted through it. */
  readonly deviceIds: ReadonlySet<string>;
}

/**
 * Port to the agent registry. Read on every connect and again when a connected agent publishes for a
 * device it did not have at connect time (a device adopted since), so it must answer from current state.
 */
export interface AgentDirectory {
  getAgent(agentId: string): Promise<AgentRecord | undefined>;
}
