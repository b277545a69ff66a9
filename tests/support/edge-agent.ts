import { once } from 'node:events';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { readAgentFiles } from '../../src/agents/agent-files.js';
import { buildFleet, EdgeSim, type EdgeSimOptions } from '../../src/edge-sim/index.js';
import type { EventStore } from '../../src/eventstore/port.js';
import { adoptCandidate, joinCandidate } from '../../src/pairing/candidates.js';
import { openPairingWindow } from '../../src/pairing/windows.js';
import type { EdgeService } from './edge-service.js';
import { siteOf } from './registry.js';
import { createTenant } from './tenants.js';

/** Polls `probe` until it returns a value, or fails naming what it waited for. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/**
 * A tenant with a site, an edge agent registered by the real CLI (`devcloud agent create`), and the reference
 * edge agent connected with the files it wrote.
 */
export async function connectedAgent(
  edge: EdgeService,
  options: { timezone: string; sim: Omit<EdgeSimOptions, 'files'> },
): Promise<{ token: string; hubId: string; sim: EdgeSim }> {
  const tenant = await createTenant(edge, ['devices:read', 'devices:write', 'telemetry:read']);
  const token = await tenant.token();
  const siteId = await siteOf(edge, tenant.projectId, 'Site', options.timezone);
  const dir = path.join(edge.dataDir, 'agent');
  const { hubId } = await edge.cli(
    'agent',
    'create',
    '--project',
    tenant.projectId,
    '--site',
    siteId,
    '--out',
    dir,
  );
  await edge.catchUp();
  const sim = new EdgeSim({ ...options.sim, files: await readAgentFiles(dir) });
  const online = once(sim, 'connected');
  sim.start();
  await online;
  return { token, hubId: hubId as string, sim };
}

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
