import { parentPort, workerData } from 'node:worker_threads';
import type { AgentFiles } from '../src/agents/agent-files.js';
import { EdgeSim, type AckedMessage } from '../src/edge-sim/index.js';
import { currentThreadCpuUs } from './cpu.js';

/**
 * The ingest benchmark's load generator, on its own thread so the simulated agents do not share the
 * service's event loop. Reports every acknowledged message count and a sample of acknowledged messages with
 * the time their PUBACK arrived, and the CPU this thread has used.
 */
interface Input {
  readonly agents: readonly AgentFiles[];
  readonly devices: number;
  readonly readingsPerSecondPerDevice: number;
  readonly readingsPerMessage: number;
  readonly sampleEvery: number;
}

const input = workerData as Input;
const port = parentPort!;
let acked = 0;
let sampling = false;
const sims = input.agents.map(
  (files, i) =>
    new EdgeSim({
      files,
      devices: input.devices,
      rate: input.readingsPerSecondPerDevice,
      seed: i + 1,
      hubReadings: false,
      dropRate: 0,
      readingsPerMessage: input.readingsPerMessage,
      maxInflight: 1000,
      queueLimit: 1_000_000,
      tickMs: 20,
    }),
);
for (const sim of sims) {
  sim.on('acked', (m: AckedMessage) => {
    acked += 1;
    if (sampling && acked % input.sampleEvery === 0) {
      port.postMessage({ kind: 'sample', message: m, ackedAtMs: Date.now() });
    }
  });
  sim.start();
}
const ready = setInterval(() => {
  if (sims.every((s) => s.stats().adopted === input.devices)) {
    clearInterval(ready);
    port.postMessage({ kind: 'ready' });
  }
}, 100);

port.on('message', async (command: { kind: 'count' | 'sample' | 'stop'; on?: boolean }) => {
  if (command.kind === 'sample') sampling = command.on === true;
  if (command.kind === 'count') {
    port.postMessage({
      kind: 'count',
      acked,
      backlog: sims.reduce((n, s) => n + s.stats().queued, 0),
      adopted: sims.map((s) => s.stats().adopted),
      // This thread's CPU so far: the agents' own work, TLS included, which shares the machine's cores.
      cpuUs: currentThreadCpuUs(),
    });
  }
  if (command.kind === 'stop') {
    await Promise.all(sims.map((s) => s.stop(2000)));
    port.postMessage({ kind: 'stopped', acked });
  }
});
