import { appendFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { createLogger } from '../../src/infra/logger.js';
import type { SoakReport } from './soak.js';

/**
 * `npm run soak -- [options]`: the soak run from the checkout, beside the product rather than inside its CLI.
 * Prints a summary on stderr and one JSON line on stdout; exits 1 when a check failed or an option is refused.
 */
const USAGE = `usage: npm run soak -- [--minutes N] [--kills K] [--devices D] [--rate R] [--seed X] [--out FILE]

Runs every role as its own process with a simulated agent, SIGKILLs random roles K times over N minutes,
while SSE clients follow the live stream and a client switches a plug every 2 s; then checks that no
acknowledged reading was lost or doubled, no live client missed or doubled a frame and no command acted
twice. Prints a summary on stderr and one JSON line on stdout; exits 1 when a check failed. Its own
embedded PostgreSQL unless DATABASE_URL names a server to create a database on (docs/reliability.md).

options:
  --minutes N  how long, up to 240 (default 1)
  --kills K    SIGKILLs spread over the run (default 20)
  --devices D  the simulated agent's devices, at least 2: device 1 is the plug the commands switch (default 3)
  --rate R     readings per second per device (default 30)
  --seed X     makes the kills and the fleet repeatable (default: from the clock)
  --out FILE   append the JSON line to FILE too
  -h, --help   this text
`;

const OPTIONS = {
  minutes: { type: 'string' },
  kills: { type: 'string' },
  devices: { type: 'string' },
  rate: { type: 'string' },
  seed: { type: 'string' },
  out: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

class UsageError extends Error {}

/** A numeric option, `fallback` when absent; out of range is refused before anything starts. */
function numberOption(
  name: string,
  raw: string | undefined,
  fallback: number,
  valid: (n: number) => boolean,
) {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || !valid(value)) throw new UsageError(`--${name} ${raw} is out of range`);
  return value;
}

async function main(argv: readonly string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({ args: [...argv], options: OPTIONS, strict: true, allowPositionals: false }));
  } catch (error) {
    process.stderr.write(`soak: ${(error as Error).message}\n${USAGE}`);
    return 1;
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  let settings;
  try {
    settings = {
      minutes: numberOption('minutes', values.minutes, 1, (n) => n > 0 && n <= 240),
      kills: numberOption('kills', values.kills, 20, (n) => Number.isInteger(n) && n >= 0),
      // Device 1 of the simulated fleet is the smart plug the soak's commands switch.
      devices: numberOption('devices', values.devices, 3, (n) => Number.isInteger(n) && n >= 2),
      rate: numberOption('rate', values.rate, 30, (n) => n > 0 && n <= 1000),
      seed: numberOption('seed', values.seed, Date.now() % 100_000, Number.isInteger),
    };
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`soak: ${error.message}\n`);
    return 1;
  }
  const logger = createLogger(process.env.LOG_LEVEL ?? 'info', process.stderr);
  // Ctrl-C or a TERM stops the soak, which still kills its role processes and removes its database.
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());
  process.once('SIGTERM', () => stop.abort());
  // Loaded once the options are good: a refused option or --help answers without loading the service.
  const { runSoak } = await import('./soak.js');
  const report = await runSoak({
    ...settings,
    signal: stop.signal,
    serverUrl: process.env.DATABASE_URL,
    logger,
  });
  process.stderr.write(summary(report) + '\n');
  const line = JSON.stringify(report);
  if (values.out) await appendFile(values.out, line + '\n');
  // The JSON line is the run's result.
  process.stdout.write(line + '\n');
  return report.ok ? 0 : 1;
}

function summary(report: SoakReport): string {
  const r = report.readings;
  const lines = [
    `soak ${report.ok ? 'PASSED' : 'FAILED'}: ${report.kills.total} kills (of ${report.kills.asked} asked) in ${report.minutes} min ` +
      `(${Object.entries(report.kills.byRole)
        .map(([role, n]) => `${role} ${n}`)
        .join(', ')}; ${report.kills.duringStartup} during start-up), ${report.starts} starts`,
    `readings: ${r.readingsAcked} acknowledged, ${r.readingsStored} stored, ${r.readingsProjected} projected; ` +
      `${r.lost} messages lost, ${r.duplicated} duplicated; ${r.resent} resent, ` +
      `${r.redeliveredAfterStored} of them already stored`,
    `live: ${report.live.clients} clients, ${report.live.framesCompared} frames compared, ` +
      `${report.live.reconnects} reconnects (${report.live.lostConnections} streams cut by kills)`,
    `commands: ${report.commands.keys} sent (${report.commands.retriedKeys} retried with the same key), ` +
      `${report.commands.applied} applied by the agent; ` +
      Object.entries(report.commands.byStatus)
        .map(([status, n]) => `${n} ${status}`)
        .join(', '),
    ...report.checks.map((c) => `  [${c.status}] ${c.name}: ${c.detail}`),
  ];
  return lines.join('\n');
}

// The soak's processes and pools are closed by runSoak; the exit guards against a stray handle.
process.exit(await main(process.argv.slice(2)));
