import { expect } from 'chai';
import { EdgeSim } from '../../src/edge-sim/index.js';
import { catchUpProjector, isCaughtUp } from '../../src/projections/catch-up.js';
import { pairingProjector } from '../../src/projections/pairing/projector.js';
import { allProjectors } from '../../src/runtime/projectors.js';
import { provisionSimulatedAgent } from '../../tools/soak/provision.js';
import { connectivityStreamName } from '../../src/ingress/connectivity.js';
import { until } from '../support/edge-agent.js';
import { startEdgeService, type EdgeService } from '../support/edge-service.js';

const DEVICES = 12;

describe('resend on reconnect while the pairing read model is behind', () => {
  let edge: EdgeService | undefined;
  let sim: EdgeSim | undefined;
  after(async () => {
    await sim?.stop(0);
    await edge?.close();
  });

  it('waits for the pairing projection, then sends every adopted device: the agent learns them all', async () => {
    // The ingress alone: nothing projects in the background, so this test decides when pairing catches up.
    edge = await startEdgeService({ roles: ['ingress'] });
    const { db, store } = edge;
    const { hubId, files } = await provisionSimulatedAgent(store, {
      dataDir: edge.dataDir,
      brokerUrl: `mqtts://127.0.0.1:${edge.mqttPort}`,
      seed: 77,
      devices: DEVICES,
    });
    const pairing = pairingProjector();
    // Everything the broker needs to let the agent in, but not the pairing read model.
    for (const projector of allProjectors()) {
      if (projector.name !== pairing.name) await catchUpProjector(db.pool, store, projector);
    }
    expect(await isCaughtUp(db.pool, store, pairing), 'pairing behind').to.equal(false);

    sim = new EdgeSim({
      files,
      devices: DEVICES,
      rate: 1,
      seed: 77,
      backoff: { initialMs: 100, maxMs: 500 },
    });
    sim.start();
    // The agent is online (its hub's connectivity recorded), so its resend has begun: it must be waiting.
    await until(
      'the hub recorded online',
      async () => {
        const events = await store.readStream(connectivityStreamName(hubId));
        return (
          events.some((e) => (e.data as { connectivity: string }).connectivity === 'online') || undefined
        );
      },
      20_000,
    );
    expect(sim.stats().adopted, 'devices learnt before the pairing projection caught up').to.equal(0);

    await catchUpProjector(db.pool, store, pairing);
    await until('every device learnt', async () => sim!.stats().adopted === DEVICES || undefined, 20_000);
    expect(sim.fleet().filter((d) => d.publicId !== undefined)).to.have.length(DEVICES);
  });
});
