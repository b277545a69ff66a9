import { readFileSync } from 'node:fs';
import { round } from './cpu.js';

/**
 * Reads the stderr of a bench run made with BENCH_SERVICE_NODE_FLAGS=--trace-gc and prints, for each
 * service process, the V8 heap left live after its full (mark-compact) collections. Each of ten equal
 * spans of time gives its floor, the least left live: what survives a full collection also holds the
 * batches and requests in flight at that moment, which come and go, while a leak raises the floor.
 * Resident memory (ingest.e2e.rss) also counts heap that V8 keeps committed but empty.
 *
 *   BENCH_SERVICE_NODE_FLAGS=--trace-gc BENCH_ONLY=e2e ... npm run bench > run.jsonl 2> gc.log
 *   npm run bench:live-heap -- gc.log
 */
// [pid:isolate]  time ms: Mark-Compact [(reduce)] before (committed) -> after (committed) MB, ...
const MARK_COMPACT =
  /^\[(\d+):0x[0-9a-f]+\]\s+(\d+) ms: Mark-Compact(?: \(reduce\))? [\d.]+ \([\d.]+\) -> ([\d.]+) \(([\d.]+)\) MB/;

const file = process.argv[2];
if (!file) {
  console.error('usage: npm run bench:live-heap -- <stderr of a run with --trace-gc>');
  process.exit(2);
}
const byPid = new Map<string, { atMs: number; liveMiB: number; committedMiB: number }[]>();
// Two processes write to one stream: a line cut by the other's output is counted, not guessed at.
let unread = 0;
for (const line of readFileSync(file, 'utf8').split('\n')) {
  const match = MARK_COMPACT.exec(line);
  if (!match) {
    if (line.includes('Mark-Compact')) unread += 1;
    continue;
  }
  const [, pid, atMs, live, committed] = match;
  const collections = byPid.get(pid!) ?? [];
  collections.push({ atMs: Number(atMs), liveMiB: Number(live), committedMiB: Number(committed) });
  byPid.set(pid!, collections);
}
for (const [pid, collections] of byPid) {
  // The first tenth of the process's life is start-up (nothing offered yet): the spans divide the time from
  // the first full collection after it to the last one.
  const lastMs = collections.at(-1)!.atMs;
  const loaded = collections.filter((c) => c.atMs >= lastMs * 0.1);
  if (loaded.length < 2) continue;
  // Ten equal spans of time; each one's floor. A span without a full collection is left out (null).
  const from = loaded[0]!.atMs;
  const span = (lastMs - from) / 10;
  const floors = Array.from({ length: 10 }, (_, i) => {
    const inSpan = loaded.filter(
      (c) => c.atMs >= from + i * span && (c.atMs < from + (i + 1) * span || i === 9),
    );
    return inSpan.length > 0 ? Math.min(...inSpan.map((c) => c.liveMiB)) : null;
  });
  const first = floors.find((f) => f !== null) ?? 0;
  const last = floors.findLast((f) => f !== null) ?? 0;
  console.log(
    JSON.stringify({
      figure: 'ingest.e2e.live_heap',
      pid: Number(pid),
      markCompacts: loaded.length,
      linesNotRead: unread,
      floorsByTenthMiB: floors,
      maxLiveMiB: Math.max(...loaded.map((c) => c.liveMiB)),
      changePercent: first > 0 ? round(((last - first) / first) * 100, 1) : null,
      firstCommittedMiB: loaded[0]!.committedMiB,
      lastCommittedMiB: loaded.at(-1)!.committedMiB,
      seconds: round((lastMs - loaded[0]!.atMs) / 1000, 0),
    }),
  );
}
