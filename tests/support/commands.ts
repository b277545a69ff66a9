import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { CommandEvent } from '../../src/domain/control/command-events.js';
import { requestCommand } from '../../src/control/commands.js';
import { setDeviceProfile, setDeviceStatus } from '../../src/control/device-admin.js';
import { readControlState } from '../../src/control/device-stream.js';
import { setCapabilityGrant } from '../../src/control/grants.js';
import { deviceStreamName } from '../../src/domain/devices/decider.js';
import type { EventStore } from '../../src/eventstore/port.js';

/**
 * The control plane driven through its application services (what the API routes and the CLI call), for
 * tests that need grants and accepted commands without HTTP.
 */
export interface Controls {
  verify(deviceId: string): Promise<void>;
  grant(deviceId: string, capability: string, write?: boolean): Promise<void>;
  command(
    deviceId: string,
    request: { capability: string; value: unknown; mode: 'desired' | 'imperative'; ttlSeconds?: number },
  ): Promise<string>;
  lifecycle(
    deviceId: string,
    status: 'active' | 'quarantined' | 'suspended' | 'revoked' | 'retired',
  ): Promise<void>;
  events(deviceId: string): Promise<{ type: string; data: Record<string, unknown> }[]>;
  commandEvents(deviceId: string, commandId: string): Promise<CommandEvent[]>;
  status(deviceId: string, commandId: string): Promise<string | undefined>;
}

export function controls(
  store: EventStore,
  options: { projectId: string; clientId?: string; now?: () => number },
): Controls {
  const clock = () => new Date((options.now ?? Date.now)());
  const clientId = options.clientId ?? 'cli_test';
  const { projectId } = options;
  const events = async (deviceId: string) =>
    (await store.readStream(deviceStreamName(deviceId))).map((e) => ({
      type: e.type,
      data: e.data as Record<string, unknown>,
    }));
  return {
    async verify(deviceId) {
      await setDeviceProfile(store, { deviceId, profile: 'verified', reason: 'test', now: clock() });
    },
    async grant(deviceId, capabilityKey, write = true) {
      await setCapabilityGrant(store, { projectId, clientId, deviceId, capabilityKey, write, now: clock() });
    },
    async lifecycle(deviceId, status) {
      await setDeviceStatus(store, { deviceId, status, reason: 'test', now: clock() });
    },
    async command(deviceId, request) {
      const answer = await requestCommand(store, {
        projectId,
        clientId,
        scopes: new Set(['commands:write', 'commands:high_risk']),
        deviceId,
        capabilityKey: request.capability,
        value: request.value,
        mode: request.mode,
        ttlSeconds: request.ttlSeconds ?? 60,
        confirm: true,
        idempotencyKey: randomUUID(),
        now: clock(),
      });
      expect(answer.replayed).to.equal(false);
      return answer.command.commandId;
    },
    events,
    async commandEvents(deviceId, commandId) {
      return (await events(deviceId)).filter(
        (e) => e.type.startsWith('Command') && e.data.commandId === commandId,
      ) as unknown as CommandEvent[];
    },
    async status(deviceId, commandId) {
      return (await readControlState(store, deviceId)).commands.get(commandId)?.status;
    },
  };
}
