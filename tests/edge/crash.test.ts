import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { agentFilesFor, readAgentFiles, writeAgentFiles } from '../../src/agents/agent-files.js';
import { registerAgent } from '../../src/agents/register.js';
import { EdgeSim, type AckedMessage } from '../../src/edge-sim/index.js';
import { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import { createProject } from '../../src/identity/projects.js';
import { loadOrCreateAuthority } from '../../src/ingress/pki/authority.js';
import { catchUpProjector } from '../../src/projections/catch-up.js';
import { allProjectors } from '../../src/runtime/projectors.js';
import { createSite } from '../../src/registry/sites.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { adoptSimulatedFleet } from '../support/edge-agent.js';
import { freePort } from '../support/edge-service.js';

const KILLS = 20;
const SEED = 11;
const DEVICES = 3;

/**
 * `edge-sim` publishes QoS 1 readings with sequence numbers while `devcloud serve` (a child process on the
 * test database) is SIGKILLed and restarted KILLS times. Afterwards every reading the broker acknowledged
 * is in the store exactly once, and no message is stored twice.
 */
describe('crash test: SIGKILL the service while readings flow', function () {
  this.timeout(150_000);
  let db: TestDatabase;
  let store: PostgresEventStore;
  let dataDir: string;
  let child: ChildProcess | undefined;

  before(async () => {
    db = await freshDatabase();
    store = new PostgresEventStore(db.pool, { connectionString: db.url, idlePollMs: 50 });
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'devcloud-crash-'));
  });
  after(async () => {
    child?.kill('SIGKILL');
    await store.close();
    await db.drop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it(`loses no acknowledged reading and stores none twice across ${KILLS} kills`, async () => {
    const port = await freePort();
    const { projectId } = await createProject(store, { name: 'crash' });
    const { siteId } = await createSite(store, { projectId, name: 'Yard', timezone: 'Europe/Madrid' });
    const authority = await loadOrCreateAuthority(path.join(dataDir, 'pki'));
    const agent = await registerAgent(store, authority, { projectId, siteId });
    const dir = path.join(dataDir, 'agent');
    await writeAgentFiles(dir, agentFilesFor(agent, authority.certificatePem, `mqtts://127.0.0.1:${port}`));
    // The simulated devices are adopted beforehand; the agent learns their ids when it reports online.
    const now = new Date();
    await adoptSimulatedFleet(store, { projectId, hubId: agent.hubId, seed: SEED, devices: DEVICES, now });
    for (const projector of allProjectors()) await catchUpProjector(db.pool, store, projector);

    const env = {
      ...process.env,
      DATABASE_URL: db.url,
      DATA_DIR: dataDir,
      MQTT_PORT: String(port),
      MQTT_HOST: '127.0.0.1',
      LOG_LEVEL: 'error',
    };
    const serve = () =>
      spawn(process.execPath, ['bin/devcloud.js', 'serve', '--roles', 'ingress'], { env, stdio: 'ignore' });

    const sim = new EdgeSim({
      files: await readAgentFiles(dir),
      devices: DEVICES,
      rate: 45,
      seed: SEED,
      backoff: { initialMs: 50, maxMs: 400 },
    });
    const acked = new Set<string>();
    sim.on('acked', (m: AckedMessage) => acked.add(`${m.deviceId}#${m.seq}`));
    sim.start();

    let ackedBeforeKills = 0;
    for (let kill = 0; kill < KILLS; kill++) {
      child = serve();
      await Promise.race([once(sim, 'connected'), sleep(15_000)]);
      // Let messages flow for a moment, then kill at an arbitrary point of it.
      await sleep(200 + Math.floor(Math.random() * 800));
      child.kill('SIGKILL');
      await once(child, 'exit');
      if (kill === 0) ackedBeforeKills = acked.size;
    }

    child = serve();
    await once(sim, 'connected');
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const { queued, inflight } = sim.stats();
      if (queued === 0 && inflight === 0) break;
      await sleep(100);
    }
    const stats = await sim.stop(5000);
    child.kill('SIGTERM');
    await once(child, 'exit');
    child = undefined;

    const stored = new Map<string, number>();
    let after: string | undefined;
    for (;;) {
      const page = await store.readAll({ after, maxCount: 5000, eventTypes: ['ReadingsRecorded'] });
      for (const event of page.events) {
        const { deviceId, seq } = event.data as { deviceId: string; seq: number };
        const key = `${deviceId}#${seq}`;
        stored.set(key, (stored.get(key) ?? 0) + 1);
      }
      after = page.lastPosition;
      if (page.atEnd) break;
    }
    const missing = [...acked].filter((key) => !stored.has(key));
    const twice = [...stored].filter(([, count]) => count > 1);
    expect(ackedBeforeKills, 'readings acknowledged before the first kill').to.be.greaterThan(0);
    expect(stats.reconnects).to.be.at.least(KILLS);
    expect(acked.size).to.be.greaterThan(KILLS * 20);
    expect(missing, 'acknowledged but not stored').to.deep.equal([]);
    expect(twice, 'stored more than once').to.deep.equal([]);
  });
});
