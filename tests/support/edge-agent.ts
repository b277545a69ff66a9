import { once } from 'node:events';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { readAgentFiles } from '../../src/agents/agent-files.js';
import { EdgeSim, type EdgeSimOptions } from '../../src/edge-sim/index.js';
import { adoptSimulatedFleet } from '../../tools/soak/provision.js';
import type { EdgeService } from './edge-service.js';
import { siteOf } from './registry.js';
import { createTenant, type Tenant } from './tenants.js';

/** The fleet adoption the soak uses, shared with tests and benchmarks. */
export { adoptSimulatedFleet };

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
 * edge agent connected with the files it wrote. With `adoptFleet`, its devices are adopted before it
 * connects, so readings flow from the first second.
 */
export async function connectedAgent(
  edge: EdgeService,
  options: {
    timezone: string;
    sim: Omit<EdgeSimOptions, 'files'>;
    scopes?: string[];
    adoptFleet?: boolean;
  },
): Promise<{ token: string; hubId: string; projectId: string; sim: EdgeSim; tenant: Tenant; dir: string }> {
  const tenant = await createTenant(
    edge,
    options.scopes ?? ['devices:read', 'devices:write', 'telemetry:read'],
  );
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
  if (options.adoptFleet) {
    await adoptSimulatedFleet(edge.store, {
      projectId: tenant.projectId,
      hubId: hubId as string,
      seed: options.sim.seed,
      devices: options.sim.devices,
      now: new Date(),
    });
  }
  await edge.catchUp();
  const sim = new EdgeSim({ ...options.sim, files: await readAgentFiles(dir) });
  const online = once(sim, 'connected');
  sim.start();
  await online;
  return { token, hubId: hubId as string, projectId: tenant.projectId, sim, tenant, dir };
}

/**
 * Adopts a connected agent's simulated fleet (`seed` and `devices` as it was started with) and resolves with
 * the public id of its device that has `capability`, once the agent has been told of the adoption.
 */
export async function adoptedDeviceWith(
  edge: EdgeService,
  agent: { readonly projectId: string; readonly hubId: string; readonly sim: EdgeSim },
  fleet: { readonly seed: number; readonly devices: number },
  capability: string,
): Promise<string> {
  await adoptSimulatedFleet(edge.store, {
    projectId: agent.projectId,
    hubId: agent.hubId,
    ...fleet,
    now: new Date(),
  });
  return until(
    `the device with ${capability} adopted`,
    async () => agent.sim.fleet().find((d) => d.capabilities.includes(capability))?.publicId,
  );
}
