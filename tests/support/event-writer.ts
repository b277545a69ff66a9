import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { registerAgent } from '../../src/agents/register.js';
import { buildFleet } from '../../src/edge-sim/index.js';
import type { EventStore } from '../../src/eventstore/port.js';
import { createProject } from '../../src/identity/projects.js';
import { loadOrCreateAuthority } from '../../src/ingress/pki/authority.js';
import { adoptCandidate, joinCandidate } from '../../src/pairing/candidates.js';
import { openPairingWindow } from '../../src/pairing/windows.js';
import { createSite } from '../../src/registry/sites.js';

export interface EventWriter {
  /** The hub and every device adopted so far, with when each adoption had been appended. */
  readonly devices: { readonly deviceId: string; readonly appendedAtMs: number }[];
  readings(): number;
  /** Stops after the round in flight and resolves once it is done. */
  stop(): Promise<void>;
}

/**
 * Keeps events arriving until stopped, as a live fleet would: every round a batch of ReadingsRecorded (for
 * the state and telemetry read models) and every `adoptEvery` (5) rounds a device adopted through the hub's pairing
 * window (for the device list), with the same services the API and the broker use.
 */
export async function startEventWriter(
  store: EventStore,
  options: { dataDir: string; readingsPerRound?: number; adoptEvery?: number; pauseMs?: number },
): Promise<EventWriter> {
  const { projectId } = await createProject(store, { name: 'event writer' });
  const { siteId } = await createSite(store, { projectId, name: 'Yard', timezone: 'Europe/Berlin' });
  const authority = await loadOrCreateAuthority(path.join(options.dataDir, 'pki'));
  const { hubId } = await registerAgent(store, authority, { projectId, siteId });
  // Pairing decisions take their time as an argument: all of them happen at the window's opening instant,
  // so the window stays open however long the test runs.
  const opened = new Date();
  const { sessionId } = await openPairingWindow(store, { projectId, hubId, now: opened });
  const devices = [{ deviceId: hubId, appendedAtMs: Date.now() }];
  let readings = 0;
  let writing = true;
  let seq = 0;
  const perRound = options.readingsPerRound ?? 40;

  const running = (async () => {
    for (let round = 0; writing; round++) {
      const at = Date.now();
      await store.appendBatch(
        Array.from({ length: perRound }, (_, i) => {
          const { deviceId } = devices[(round + i) % devices.length]!;
          const deviceTime = new Date(at - i * 250).toISOString();
          return {
            streamName: `readings-${deviceId}`,
            event: {
              id: randomUUID(),
              type: 'ReadingsRecorded',
              data: {
                deviceId,
                projectId,
                siteId,
                agentId: 'agt_writer',
                seq: ++seq,
                receivedAt: new Date(at).toISOString(),
                readings: [
                  { capability: 'system.uptime', value: seq, deviceTime },
                  { capability: 'system.device_temperature', value: 20 + (seq % 70) / 7, deviceTime },
                ],
              },
            },
          };
        }),
      );
      readings += perRound * 2;
      if (round % (options.adoptEvery ?? 5) === 0) {
        const [device] = buildFleet(round + 100, 1);
        const ieeeAddr = `0x${(0x00124b0000000000n + BigInt(round)).toString(16).padStart(16, '0')}`;
        const candidate = { hubId, sessionId, ieeeAddr, now: opened };
        await joinCandidate(store, {
          ...candidate,
          manufacturer: device!.profile.manufacturer,
          productModel: device!.profile.model,
          capabilities: device!.profile.capabilities,
        });
        const adopted = await adoptCandidate(store, candidate);
        devices.push({ deviceId: adopted.device.deviceId, appendedAtMs: Date.now() });
      }
      await sleep(options.pauseMs ?? 20);
    }
  })();

  return {
    devices,
    readings: () => readings,
    async stop() {
      writing = false;
      await running;
    },
  };
}
