import { findCapability } from '../catalogue/index.js';
import { deviceDecider, type DeviceEvent } from '../devices/index.js';
import type { GrantEvent } from '../control/grant-events.js';
import { pairingDecider, type AdoptCandidate, type PairingState } from './decider.js';
import type { PairingEvent } from './events.js';

export interface AdoptionHub {
  readonly hubId: string;
  readonly projectId: string;
  readonly siteId: string;
}

/** What one adoption records, per stream, and the capabilities it left denied. */
export interface AdoptionDecision {
  /** For the hub's pairing stream. */
  readonly pairing: readonly PairingEvent[];
  /** For the new device's stream: its registration, then one explicit write denial per writable capability. */
  readonly device: readonly (DeviceEvent | GrantEvent)[];
  /** The spec's write_blocked[]: every writable capability of the new device, in the order it reported them. */
  readonly writeBlocked: readonly string[];
}

/**
 * Adoption turns a pending candidate into a device of the hub's project and site, reached through the hub,
 * status active, profile draft, with the capabilities found at its interview, and grants it no control:
 * each writable capability starts with a recorded denial (spec, Grants and Pairing rule 3).
 */
export function decideAdoption(
  state: PairingState,
  command: AdoptCandidate,
  hub: AdoptionHub,
): AdoptionDecision {
  const pairing = pairingDecider.decide(command, state);
  const candidate = state.sessions.get(command.sessionId)!.candidates.get(command.ieeeAddr)!;
  const registration = deviceDecider.decide(
    {
      type: 'RegisterDevice',
      deviceId: command.deviceId,
      projectId: hub.projectId,
      siteId: hub.siteId,
      parentHubId: hub.hubId,
      kind: 'device',
      manufacturer: candidate.manufacturer,
      productModel: candidate.productModel,
      capabilities: candidate.capabilities,
      profile: 'draft',
      ieeeAddr: candidate.ieeeAddr,
    },
    deviceDecider.initialState(),
  );
  const writeBlocked = candidate.capabilities.filter((key) => findCapability(key)?.writable === true);
  const denials: GrantEvent[] = writeBlocked.map((capability) => ({
    type: 'CapabilityWriteDenied',
    data: { deviceId: command.deviceId, projectId: hub.projectId, capability, reason: 'adoption_default' },
  }));
  return { pairing, device: [...registration, ...denials], writeBlocked };
}
