import { appendFile } from 'node:fs/promises';
import { createLogger } from '../../infra/logger.js';
import type { SoakReport } from '../../soak/soak.js';
import { defineCommand, type OptionValues } from '../command.js';
import { numberOption } from './edge-sim.js';

const SOAK_OPTIONS = {
  minutes: { type: 'string', value: 'N', help: 'how long, up to 240 (default 1)' },
  kills: { type: 'string', value: 'K', help: 'SIGKILLs spread over the run (default 20)' },
  devices: {
    type: 'string',
    value: 'D',
    help: "the simulated agent's devices, at least 2: device 1 is the plug the commands switch (default 3)",
  },
  rate: { type: 'string', value: 'R', help: 'readings per second per device (default 30)' },
  seed: {
    type: 'string',
    value: 'X',
    help: 'makes the kills and the fleet repeatable (default: from the clock)',
  },
  out: { type: 'string', value: 'FILE', help: 'append the JSON line to FILE too' },
} as const;

export const soakCommand = defineCommand({
  name: 'soak',
  summary:
    'run every role as its own process with a simulated agent, SIGKILL random roles K times over N ' +
    'minutes, while SSE clients follow the live stream and a client switches a plug every 2 s; then ' +
    'check that no acknowledged reading was lost or doubled, no live client missed or doubled a frame ' +
    'and no command acted twice',
  details:
    'Prints a summary on stderr and one JSON line on stdout (it takes no --json: its result is JSON ' +
    'already); exits 1 when a check failed. Its own embedded PostgreSQL unless DATABASE_URL names a ' +
    'server to create a database on (docs/reliability.md).',
  options: SOAK_OPTIONS,
  run: ({ values }) => soak(values),
});

async function soak(options: OptionValues<typeof SOAK_OPTIONS>): Promise<void> {
  const minutes = numberOption('soak', '--minutes', options.minutes, 1, (n) => n > 0 && n <= 240);
  const kills = numberOption('soak', '--kills', options.kills, 20, (n) => Number.isInteger(n) && n >= 0);
  // Device 1 of the simulated fleet is the smart plug the soak's commands switch.
  const devices = numberOption('soak', '--devices', options.devices, 3, (n) => Number.isInteger(n) && n >= 2);
  const rate = numberOption('soak', '--rate', options.rate, 30, (n) => n > 0 && n <= 1000);
  const seed = numberOption('soak', '--seed', options.seed, Date.now() % 100_000, Number.isInteger);
  const logger = createLogger(process.env.LOG_LEVEL ?? 'info', process.stderr);
  // Ctrl-C or a TERM stops the soak, which still kills its role processes and removes its database.
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());
  process.once('SIGTERM', () => stop.abort());
  // Loaded when run, as `serve` loads the service: the other commands start without it.
  const { runSoak } = await import('../../soak/soak.js');
  const report = await runSoak({
    signal: stop.signal,
    minutes,
    kills,
    devices,
    rate,
    seed,
    serverUrl: process.env.DATABASE_URL,
    logger,
  });
  process.stderr.write(summary(report) + '\n');
  const line = JSON.stringify(report);
  if (options.out) await appendFile(options.out, line + '\n');
  // The JSON line is the command's result.
  process.stdout.write(line + '\n');
  if (!report.ok) process.exitCode = 1;
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
