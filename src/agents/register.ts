import { randomUUID } from 'node:crypto';
import { agentDecider, agentStreamName } from '../domain/agents/index.js';
import { deviceDecider, deviceStreamName } from '../domain/devices/index.js';
import { NotFound } from '../domain/errors.js';
import { projectStream } from '../domain/identity/index.js';
import { siteStreamName, type SiteEvent } from '../domain/sites/index.js';
import type { EventStore, NewEvent } from '../eventstore/port.js';
import type { Authority, IssuedCertificate } from '../ingress/pki/authority.js';
import { newAgentId, newDevicePublicId } from '../registry/ids.js';

/** What a hub registered by `agent create` reports about itself until its agent says more. */
const HUB_MANUFACTURER = 'Device Cloud';
const HUB_PRODUCT_MODEL = 'Edge hub';
/** The coordinator's own diagnostics; its agent may publish these for the hub. */
export const HUB_CAPABILITIES = ['system.uptime', 'system.device_temperature'] as const;
const AGENT_CERTIFICATE_DAYS = 365;

export interface RegisteredAgent {
  readonly agentId: string;
  readonly hubId: string;
  readonly projectId: string;
  readonly siteId: string;
  /** The site's IANA timezone: the agent's daily counters reset at its midnight. */
  readonly timezone: string;
  /** Handed to the caller once, to be written to the agent's files; never stored or logged here. */
  readonly certificate: IssuedCertificate;
  readonly position: string;
}

/** An agent decided and its certificate issued, not yet recorded: `record` appends its registration. */
export interface PreparedAgent extends Omit<RegisteredAgent, 'position'> {
  record(): Promise<RegisteredAgent>;
}

/**
 * Registers an edge agent and the hub it fronts (a device with a public id, no parent, in the site), in one
 * append across the two streams, and issues the agent's certificate from the edge CA. An unknown project,
 * or a site that does not exist in that project, is not found.
 */
export async function registerAgent(
  store: EventStore,
  authority: Authority,
  input: { projectId: string; siteId: string },
  metadata: Record<string, unknown> = {},
): Promise<RegisteredAgent> {
  return (await prepareAgent(store, authority, input, metadata)).record();
}

/**
 * registerAgent in two steps, for a caller that must do something with the certificate (write the agent's
 * files) before anything is recorded, and record nothing if that fails. An issued certificate whose agent
 * is never recorded is refused by the broker, as its agent does not exist.
 */
export async function prepareAgent(
  store: EventStore,
  authority: Authority,
  input: { projectId: string; siteId: string },
  metadata: Record<string, unknown> = {},
): Promise<PreparedAgent> {
  const { projectId, siteId } = input;
  const project = await store.readStream(projectStream(projectId), { maxCount: 1 });
  if (project.length === 0) throw new NotFound('project');
  const [site] = await store.readStream(siteStreamName(siteId), { maxCount: 1 });
  const siteCreated = site && ({ type: site.type, data: site.data } as SiteEvent);
  if (!siteCreated || siteCreated.data.projectId !== projectId) throw new NotFound('site');

  const agentId = newAgentId();
  const hubId = newDevicePublicId();
  const certificate = await authority.issueAgentCertificate({
    agentId,
    validityDays: AGENT_CERTIFICATE_DAYS,
  });
  const agentEvents = agentDecider.decide(
    {
      type: 'RegisterAgent',
      agentId,
      projectId,
      siteId,
      hubId,
      certificateSerial: certificate.serialNumber,
    },
    agentDecider.initialState(),
  );
  const hubEvents = deviceDecider.decide(
    {
      type: 'RegisterDevice',
      deviceId: hubId,
      projectId,
      siteId,
      parentHubId: null,
      kind: 'hub',
      manufacturer: HUB_MANUFACTURER,
      productModel: HUB_PRODUCT_MODEL,
      capabilities: [...HUB_CAPABILITIES],
      profile: 'draft',
    },
    deviceDecider.initialState(),
  );
  const toNew = (e: { type: string; data: unknown }): NewEvent => ({ id: randomUUID(), ...e, metadata });
  const agent = { agentId, hubId, projectId, siteId, timezone: siteCreated.data.timezone, certificate };
  return {
    ...agent,
    async record() {
      const [, hubAppended] = await store.appendMany([
        {
          streamName: agentStreamName(agentId),
          events: agentEvents.map(toNew),
          expectedRevision: 'no_stream',
        },
        { streamName: deviceStreamName(hubId), events: hubEvents.map(toNew), expectedRevision: 'no_stream' },
      ]);
      return { ...agent, position: hubAppended!.position };
    },
  };
}
