import { readFileSync } from 'node:fs';
import type { AgentEvent } from '../../domain/agents/index.js';
import type { DeviceEvent } from '../../domain/devices/index.js';
import type { Projector } from '../projector.js';

const schemaSql = readFileSync(new URL('./schema.sql', import.meta.url), 'utf8');

// Each row is written once by its first event and only ever moves to revoked, so a replay changes nothing.
const INSERT_AGENT = `
  INSERT INTO agents (agent_id, project_id, site_id, hub_id, certificate_serial, registered_at)
  VALUES ($1, $2, $3, $4, $5, $6)
  ON CONFLICT (agent_id) DO NOTHING`;

const REVOKE_AGENT = `UPDATE agents SET revoked = true, revoked_at = $2 WHERE agent_id = $1 AND NOT revoked`;

const INSERT_CHILDREN = `
  INSERT INTO agent_devices (device_id, hub_id)
  SELECT * FROM unnest($1::text[], $2::text[])
  ON CONFLICT (device_id) DO NOTHING`;

/** The agent directory's read model: agents, and the devices each one may speak for besides its hub. */
export function agentsProjector(): Projector {
  return {
    name: 'agents',
    version: 1,
    eventTypes: ['AgentRegistered', 'AgentRevoked', 'DeviceRegistered'],
    tables: ['agents', 'agent_devices'],
    schemaSql,
    async apply(events, db) {
      const children: { deviceId: string; hubId: string }[] = [];
      for (const event of events) {
        const e = { type: event.type, data: event.data } as AgentEvent | DeviceEvent;
        if (e.type === 'AgentRegistered') {
          const d = e.data;
          await db.query(INSERT_AGENT, [
            d.agentId,
            d.projectId,
            d.siteId,
            d.hubId,
            d.certificateSerial ?? null,
            event.recordedAt.toISOString(),
          ]);
        } else if (e.type === 'AgentRevoked') {
          await db.query(REVOKE_AGENT, [e.data.agentId, event.recordedAt.toISOString()]);
        } else if (e.type === 'DeviceRegistered' && e.data.parentHubId !== null) {
          children.push({ deviceId: e.data.deviceId, hubId: e.data.parentHubId });
        }
      }
      if (children.length > 0) {
        await db.query(INSERT_CHILDREN, [children.map((c) => c.deviceId), children.map((c) => c.hubId)]);
      }
    },
  };
}
