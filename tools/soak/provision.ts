import path from 'node:path';
import {
  agentFilesFor,
  readAgentFiles,
  writeAgentFiles,
  type AgentFiles,
} from '../../src/agents/agent-files.js';
import { registerAgent } from '../../src/agents/register.js';
import { buildFleet } from '../../src/edge-sim/index.js';
import type { EventStore } from '../../src/eventstore/port.js';
import { createProject } from '../../src/identity/projects.js';
import { loadOrCreateAuthority } from '../../src/ingress/pki/authority.js';
import { adoptCandidate, joinCandidate } from '../../src/pairing/candidates.js';
import { openPairingWindow } from '../../src/pairing/windows.js';
import { createSite } from '../../src/registry/sites.js';

/**
 * Adopts the simulator's whole fleet for `seed` through the hub's pairing stream (the same services the API
 * uses), so readings can flow from the first second; the agent learns the public ids when it reports online.
 */
export async function adoptSimulatedFleet(
  store: EventStore,
  options: {
    projectId: string;
    hubId: string;
    seed: number;
    devices: number;
    now: Date;
    durationSeconds?: number;
  },
): Promise<void> {
  const { projectId, hubId, now } = options;
  const { sessionId } = await openPairingWindow(store, {
    projectId,
    hubId,
    now,
    durationSeconds: options.durationSeconds,
  });
  for (const device of buildFleet(options.seed, options.devices)) {
    const candidate = { hubId, sessionId, ieeeAddr: device.ieeeAddr, now };
    await joinCandidate(store, {
      ...candidate,
      manufacturer: device.profile.manufacturer,
      productModel: device.profile.model,
      capabilities: device.profile.capabilities,
    });
    await adoptCandidate(store, candidate);
  }
}

/**
 * A project, a site, an edge agent with its files under `dataDir/agent` (certificate from the edge CA in
 * `dataDir/pki`, the one the ingress role loads) and its simulated fleet adopted: everything a crash test or
 * a soak needs before the simulator connects to `brokerUrl`.
 */
export async function provisionSimulatedAgent(
  store: EventStore,
  options: { dataDir: string; brokerUrl: string; seed: number; devices: number; timezone?: string },
): Promise<{ projectId: string; hubId: string; files: AgentFiles }> {
  const { projectId, agents } = await provisionSimulatedAgents(store, { ...options, agents: 1 });
  return { projectId, ...agents[0]! };
}

/**
 * `agents` agents of one project and site, as provisionSimulatedAgent makes one: agent `i` under
 * `dataDir/agent` (the first) or `dataDir/agent-<i>`, its fleet from seed `seed + i`.
 */
export async function provisionSimulatedAgents(
  store: EventStore,
  options: {
    dataDir: string;
    brokerUrl: string;
    seed: number;
    devices: number;
    agents: number;
    timezone?: string;
  },
): Promise<{ projectId: string; agents: { hubId: string; files: AgentFiles; seed: number }[] }> {
  const { projectId } = await createProject(store, { name: 'simulated fleet' });
  const { siteId } = await createSite(store, {
    projectId,
    name: 'Yard',
    timezone: options.timezone ?? 'Europe/Madrid',
  });
  const authority = await loadOrCreateAuthority(path.join(options.dataDir, 'pki'));
  const agents = [];
  for (let i = 0; i < options.agents; i++) {
    const agent = await registerAgent(store, authority, { projectId, siteId });
    const dir = path.join(options.dataDir, i === 0 ? 'agent' : `agent-${i}`);
    await writeAgentFiles(dir, agentFilesFor(agent, authority.certificatePem, options.brokerUrl));
    const seed = options.seed + i;
    await adoptSimulatedFleet(store, {
      projectId,
      hubId: agent.hubId,
      seed,
      devices: options.devices,
      now: new Date(),
    });
    agents.push({ hubId: agent.hubId, files: await readAgentFiles(dir), seed });
  }
  return { projectId, agents };
}
