import { parentPort, workerData } from 'node:worker_threads';

/**
 * The telemetry query benchmark's client, on its own thread as an application's backend is in its own
 * process: the service's event loop does not also parse the answers. A query's latency runs from sending
 * the request to the last byte of the answer; the answer is parsed and checked after the clock stops.
 */
interface Input {
  readonly url: string;
  readonly token: string;
  readonly warmUp: number;
  readonly queries: number;
}

const input = workerData as Input;
const latencies: number[] = [];
let points = 0;
for (let i = 0; i < input.warmUp + input.queries; i++) {
  const t0 = process.hrtime.bigint();
  const response = await fetch(input.url, { headers: { Authorization: `Bearer ${input.token}` } });
  const bytes = await response.arrayBuffer();
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (response.status !== 200) throw new Error(`HTTP ${response.status}: ${Buffer.from(bytes).toString()}`);
  const body = JSON.parse(Buffer.from(bytes).toString()) as { points?: unknown[] };
  points = body.points?.length ?? 0;
  if (i >= input.warmUp) latencies.push(ms);
}
parentPort!.postMessage({ kind: 'done', latencies, points });
