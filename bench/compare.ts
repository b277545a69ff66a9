/**
 * `npm run bench:compare -- run1.jsonl run2.jsonl run3.jsonl [--all]`: the median and spread of each figure
 * over several runs of `npm run bench` (one file of JSON lines per run; lines that are not JSON are
 * skipped, so a captured terminal log works too). A figure measured at several offered rates is one row per
 * rate. Without --all only the headline fields are shown.
 */
import { readFileSync } from 'node:fs';

const HEADLINE = new Set([
  'eventsPerSecond',
  'messagesPerSecond',
  'projectedMessagesPerSecond',
  'lagP50Seconds',
  'lagMaxSeconds',
  'catchUpSeconds',
  'readingsPerSecond',
  'agentBacklogAtEnd',
  'microsecondsPerMessage',
  'cpuMicrosecondsPerEvent',
  'p50Ms',
  'p95Ms',
  'p99Ms',
  'maxMs',
  'changePercent',
  'lastMiB',
  'machineBusyShare',
  'shareOfCore',
  'milliseconds',
  'walBytes',
]);

const args = process.argv.slice(2);
const all = args.includes('--all');
const files = args.filter((a) => a !== '--all');
if (files.length === 0) {
  process.stderr.write('usage: npm run bench:compare -- RUN.jsonl [RUN.jsonl ...] [--all]\n');
  process.exit(2);
}

/** figure key -> field -> one value per run */
const table = new Map<string, Map<string, (number | null)[]>>();
files.forEach((file, run) => {
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    let figure: Record<string, unknown>;
    try {
      figure = JSON.parse(line) as Record<string, unknown>;
    } catch {
      continue;
    }
    if (typeof figure !== 'object' || figure === null || typeof figure.figure !== 'string') continue;
    const rate = figure.offeredMessagesPerSecond;
    const key = rate === undefined ? figure.figure : `${figure.figure} @${String(rate)}/s`;
    const fields = table.get(key) ?? new Map<string, (number | null)[]>();
    table.set(key, fields);
    for (const [field, value] of Object.entries(figure)) {
      if (!all && !HEADLINE.has(field)) continue;
      if (typeof value !== 'number' && value !== null) continue;
      const values = fields.get(field) ?? Array.from({ length: files.length }, () => null);
      values[run] = value;
      fields.set(field, values);
    }
  }
});

const rows: string[][] = [['figure', 'field', 'runs', 'median', 'min', 'max', 'spread']];
for (const [key, fields] of [...table].sort(([a], [b]) => a.localeCompare(b))) {
  for (const [field, values] of fields) {
    const present = values.filter((v): v is number => typeof v === 'number').sort((a, b) => a - b);
    if (present.length === 0) continue;
    const median =
      present.length % 2 === 1
        ? present[(present.length - 1) / 2]!
        : (present[present.length / 2 - 1]! + present[present.length / 2]!) / 2;
    const min = present[0]!;
    const max = present.at(-1)!;
    // Spread: the range as a share of the median, the figure to quote beside it.
    const spread = median !== 0 ? `±${((100 * (max - min)) / 2 / Math.abs(median)).toFixed(1)} %` : '';
    rows.push([key, field, `${present.length}/${files.length}`, fmt(median), fmt(min), fmt(max), spread]);
  }
}

const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
for (const row of rows) {
  process.stdout.write(
    row.map((cell, i) => (i < 2 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ') + '\n',
  );
}

function fmt(n: number): string {
  if (Number.isInteger(n)) return String(n);
  // Shares of a core or of the machine (0.057) would all print as 0.1.
  return Math.abs(n) < 1 ? n.toFixed(3) : n.toFixed(1);
}
