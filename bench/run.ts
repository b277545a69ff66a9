/**
 * `npm run bench`: every benchmark, one JSON line per figure on stdout. BENCH_ONLY=name runs one group.
 * Figures are measured here and recorded in docs/performance.md; no test asserts on speed.
 */
import { eventStoreBenchmarks } from './eventstore.bench.js';
import { ingestBenchmarks } from './ingest.bench.js';
import { telemetryBenchmarks } from './telemetry.bench.js';

const groups: Record<string, () => Promise<void>> = {
  eventstore: eventStoreBenchmarks,
  telemetry: telemetryBenchmarks,
  ingest: ingestBenchmarks,
};

const only = process.env.BENCH_ONLY?.split(',');
for (const [name, run] of Object.entries(groups)) {
  if (only && !only.includes(name)) continue;
  await run();
}
