import type { ControlEvent } from '../../src/domain/control/index.js';
import type { DeviceStatus } from '../../src/domain/devices/index.js';
import type { Actor } from '../../src/domain/events/actor.js';

/**
 * Past events of one device stream (`device-dev_1` of project prj_1), for given/when/then specifications of
 * the control plane. Times are fixed so expected events can be written out in full.
 */
export const client: Actor = { kind: 'client', clientId: 'cli_1' };
export const operator = (reason?: string): Actor => ({ kind: 'operator', ...(reason ? { reason } : {}) });

const DEVICE = 'dev_1';
const PROJECT = 'prj_1';

type AcceptedData = Extract<ControlEvent, { type: 'CommandAccepted' }>['data'];

export const history = {
  ref: (commandId: string) => ({ commandId, deviceId: DEVICE, projectId: PROJECT }),

  registered: (
    capabilities: string[] = ['binary.switch', 'actuator.relay', 'actuator.valve', 'actuator.contactor'],
    profile: 'draft' | 'verified' = 'draft',
  ): ControlEvent => ({
    type: 'DeviceRegistered',
    data: {
      deviceId: DEVICE,
      projectId: PROJECT,
      siteId: 'site_1',
      parentHubId: 'dev_hub',
      kind: 'device',
      manufacturer: 'Acme',
      productModel: 'R2',
      capabilities,
      profile,
      ieeeAddr: '0x00158d0001a2b3c4',
    },
  }),

  verified: (): ControlEvent => ({
    type: 'DeviceProfileVerified',
    data: {
      deviceId: DEVICE,
      reason: 'bench tested',
      by: operator('bench tested'),
      at: '2026-01-01T00:00:01.000Z',
    },
  }),

  downgraded: (): ControlEvent => ({
    type: 'DeviceProfileDowngraded',
    data: {
      deviceId: DEVICE,
      reason: 'firmware changed',
      by: operator('firmware changed'),
      at: '2026-01-01T00:00:03.000Z',
    },
  }),

  lifecycle: (status: DeviceStatus, reason?: string): ControlEvent => ({
    type: 'DeviceLifecycleChanged',
    data: {
      deviceId: DEVICE,
      status,
      ...(reason ? { reason } : {}),
      by: operator(reason),
      at: '2026-01-01T00:00:02.000Z',
    },
  }),

  denied: (capability: string): ControlEvent => ({
    type: 'CapabilityWriteDenied',
    data: { deviceId: DEVICE, projectId: PROJECT, capability, reason: 'adoption_default' },
  }),

  granted: (capability: string, at = '2026-01-01T00:00:04.000Z'): ControlEvent => ({
    type: 'CapabilityWriteGranted',
    data: { deviceId: DEVICE, projectId: PROJECT, capability, by: client, at },
  }),

  revoked: (capability: string, at = '2026-01-01T00:00:06.000Z'): ControlEvent => ({
    type: 'CapabilityWriteRevoked',
    data: { deviceId: DEVICE, projectId: PROJECT, capability, by: client, at },
  }),

  challenge: (challengeId: string, overrides: { clientId?: string; value?: boolean } = {}): ControlEvent => ({
    type: 'CommandChallengeIssued',
    data: {
      challengeId,
      deviceId: DEVICE,
      projectId: PROJECT,
      clientId: overrides.clientId ?? 'cli_1',
      capability: 'actuator.contactor',
      value: overrides.value ?? true,
      mode: 'imperative',
      ttlSeconds: 60,
      issuedAt: '2026-01-01T00:00:05.000Z',
      expiresAt: '2026-01-01T00:01:05.000Z',
    },
  }),

  /** A challenge as recorded before mode and TTL were part of its terms (events are kept forever). */
  challengeWithoutModeAndTtl: (challengeId: string): ControlEvent => {
    const {
      mode: _m,
      ttlSeconds: _t,
      ...older
    } = (history.challenge(challengeId) as Extract<ControlEvent, { type: 'CommandChallengeIssued' }>).data;
    return { type: 'CommandChallengeIssued', data: older };
  },

  accepted: (commandId: string, overrides: Partial<AcceptedData> = {}): ControlEvent => ({
    type: 'CommandAccepted',
    data: {
      ...history.ref(commandId),
      capability: 'actuator.relay',
      value: true,
      mode: 'imperative',
      ttlSeconds: 60,
      acceptedAt: '2026-01-01T00:00:10.000Z',
      expiresAt: '2026-01-01T00:01:10.000Z',
      by: client,
      idempotencyKey: `key-${commandId}`,
      requestHash: `hash-${commandId}`,
      ...overrides,
    },
  }),

  sent: (commandId: string, attempt: number): ControlEvent => ({
    type: 'CommandSent',
    data: {
      ...history.ref(commandId),
      agentId: 'agt_1',
      attempt,
      sentAt: `2026-01-01T00:00:1${attempt}.000Z`,
    },
  }),
};
