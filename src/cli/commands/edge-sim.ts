import path from 'node:path';
import { readAgentFiles } from '../../agents/agent-files.js';
import { EdgeSim } from '../../edge-sim/index.js';
import { createLogger } from '../../infra/logger.js';
import { CliError, type Output } from '../output.js';

export const EDGE_SIM_USAGE = `  edge-sim --agent DIR [--devices N] [--rate R] [--duration S] [--seed X]
                                                    run a simulated edge agent with the files of agent create:
                                                    N devices (13), R readings/s per device (1), S seconds
                                                    (until Ctrl-C), seed X (1)`;

export interface EdgeSimCliOptions {
  readonly agent?: string;
  readonly devices?: string;
  readonly rate?: string;
  readonly duration?: string;
  readonly seed?: string;
}

/** `devcloud edge-sim`: the reference agent, for demos and load. It needs no database: it is the edge. */
export async function edgeSimCommand(out: Output, options: EdgeSimCliOptions): Promise<void> {
  if (!options.agent) throw new CliError('edge-sim: --agent DIR is required');
  const devices = numberOption(
    '--devices',
    options.devices,
    13,
    (n) => Number.isInteger(n) && n >= 0 && n <= 10_000,
  );
  const rate = numberOption('--rate', options.rate, 1, (n) => n > 0 && n <= 1000);
  const duration = numberOption('--duration', options.duration, 0, (n) => n >= 0);
  const seed = numberOption('--seed', options.seed, 1, (n) => Number.isInteger(n));
  const files = await readAgentFiles(path.resolve(options.agent)).catch((error: Error) => {
    throw new CliError(`edge-sim: cannot read the agent files in ${options.agent}: ${error.message}`);
  });
  const logger = createLogger(process.env.LOG_LEVEL ?? 'info', process.stderr);
  const sim = new EdgeSim({ files, devices, rate, seed, logger });
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

function numberOption(
  name: string,
  raw: string | undefined,
  fallback: number,
  valid: (n: number) => boolean,
): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || !valid(value))
    throw new CliError(`edge-sim: ${name} ${raw} is out of range`);
  return value;
}
