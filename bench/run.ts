/**
 * `npm run bench`: every benchmark, one JSON line per figure on stdout. BENCH_ONLY=name[,name] runs some
 * groups: eventstore, telemetry, retention (telemetry partitions dropped vs rows deleted), components (each ingest component alone), e2e (end-to-end ingest),
 * ingest (components then e2e, so the end-to-end figures can give their share of each ceiling), live,
 * scaleout (the multi-process topology with 1 and 2 brokers and projector processes), audit (the audit chain:
 * chaining and verifying BENCH_AUDIT_EVENTS control events). Two run only when named, as the measurements
 * behind decision records: audit-append (the chain computed inside the append, docs/audit.md) and ratelimit
 * (our request rate limit against rate-limiter-flexible, in memory and through Redis).
 * Figures are measured here and recorded in docs/performance.md; no test asserts on speed.
 * `npm run bench:compare -- FILE...` prints median and spread over several runs' output.
 */
import { auditAppendBenchmarks } from './audit-append.bench.js';
import { auditBenchmarks } from './audit.bench.js';
import { componentBenchmarks } from './components.bench.js';
import { commandBenchmarks } from './commands.bench.js';
import { eventStoreBenchmarks } from './eventstore.bench.js';
import { ingestBenchmarks } from './ingest.bench.js';
import { liveBenchmarks } from './live.bench.js';
import { rateLimitBenchmarks } from './rate-limit.bench.js';
import { retentionBenchmarks } from './retention.bench.js';
import { roundTripBenchmarks } from './roundtrip.bench.js';
import { scaleOutBenchmarks } from './scale-out.bench.js';
import { undoOnSignals, untilStopped } from './interrupt.js';
import { releaseBenchServer } from './support.js';
import { telemetryBenchmarks } from './telemetry.bench.js';

// A group marked `named` runs only when BENCH_ONLY names it: a measurement behind a decision record.
const groups: [name: string, aliases: string[], run: () => Promise<void>, named?: 'named'][] = [
  ['eventstore', [], eventStoreBenchmarks],
  ['telemetry', [], telemetryBenchmarks],
  ['retention', [], retentionBenchmarks],
  ['components', ['ingest'], componentBenchmarks],
  ['e2e', ['ingest'], ingestBenchmarks],
  ['commands', [], commandBenchmarks],
  ['live', [], liveBenchmarks],
  ['roundtrip', [], roundTripBenchmarks],
  ['scaleout', [], scaleOutBenchmarks],
  ['audit', [], auditBenchmarks],
  ['audit-append', [], auditAppendBenchmarks, 'named'],
  ['ratelimit', [], rateLimitBenchmarks, 'named'],
];

const only = process.env.BENCH_ONLY?.split(',');
// Stopped early, the run still stops what it started, the embedded cluster last (interrupt.ts).
undoOnSignals(releaseBenchServer);
try {
  for (const [name, aliases, run, named] of groups) {
    const chosen = only ? only.includes(name) || aliases.some((a) => only.includes(a)) : !named;
    if (!chosen) continue;
    await run();
  }
} catch (error) {
  // A benchmark failing because the run was interrupted under it: the undo finishes and exits.
  await untilStopped();
  throw error;
} finally {
  await releaseBenchServer();
}
