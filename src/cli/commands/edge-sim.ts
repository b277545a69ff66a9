import path from 'node:path';
import { readAgentFiles } from '../../agents/agent-files.js';
import { createLogger } from '../../infra/logger.js';
import type { OptionValues } from '../command.js';
import type { EDGE_SIM_OPTIONS } from '../declarations/edge-sim.js';
import { CliError, type Output } from '../output.js';

/** `devcloud edge-sim`: the reference agent, for demos and load. It needs no database: it is the edge. */
export async function edgeSim(out: Output, options: OptionValues<typeof EDGE_SIM_OPTIONS>): Promise<void> {
  const agent = options.agent!;
  const devices = numberOption(
    'edge-sim',
    '--devices',
    options.devices,
    13,
    (n) => Number.isInteger(n) && n >= 0 && n <= 10_000,
  );
  const rate = numberOption('edge-sim', '--rate', options.rate, 1, (n) => n > 0 && n <= 1000);
  const duration = numberOption('edge-sim', '--duration', options.duration, 0, (n) => n >= 0);
  const seed = numberOption('edge-sim', '--seed', options.seed, 1, (n) => Number.isInteger(n));
  const delay = (n: number) => Number.isInteger(n) && n >= 0 && n <= 3_600_000;
  const commands = {
    failCapabilities: options['fail-capabilities']?.split(',').filter((k) => k.length > 0),
    failRate: numberOption('edge-sim', '--fail-rate', options['fail-rate'], 0, (n) => n >= 0 && n <= 1),
    applyDelayMs: numberOption('edge-sim', '--apply-delay-ms', options['apply-delay-ms'], 0, delay),
    ackDelayMs: numberOption('edge-sim', '--ack-delay-ms', options['ack-delay-ms'], 0, delay),
  };
  const files = await readAgentFiles(path.resolve(agent)).catch((error: Error) => {
    throw new CliError(`edge-sim: cannot read the agent files in ${agent}: ${error.message}`);
  });
  const logger = createLogger(process.env.LOG_LEVEL ?? 'info', process.stderr);
  // Loaded once the options and the agent files are good, as `serve` loads the service: a refusal does not
  // wait for the MQTT client.
  const { EdgeSim } = await import('../../edge-sim/index.js');
  const sim = new EdgeSim({ files, devices, rate, seed, logger, commands });
  sim.on('adopted', (d: { ieeeAddr: string; publicId: string }) => logger.info(d, 'device adopted'));
  sim.on('rejected', (ieeeAddr: string) => logger.info({ ieeeAddr }, 'device rejected'));
  sim.start();
  const progress = setInterval(() => out.progress({ event: 'progress', ...sim.stats() }), 5000);
  await new Promise<void>((resolve) => {
    if (duration > 0) setTimeout(resolve, duration * 1000);
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  clearInterval(progress);
  const stats = await sim.stop();
  out.result({ event: 'stopped', agentId: files.connection.agentId, ...stats });
}

/** A numeric flag of `command`, `fallback` when absent; out of range is a one-line CLI error. */
function numberOption(
  command: string,
  name: string,
  raw: string | undefined,
  fallback: number,
  valid: (n: number) => boolean,
): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || !valid(value))
    throw new CliError(`${command}: ${name} ${raw} is out of range`);
  return value;
}
