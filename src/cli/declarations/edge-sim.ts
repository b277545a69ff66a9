import { defineCommand, JSON_OUTPUT } from '../command.js';

export const EDGE_SIM_OPTIONS = {
  agent: { type: 'string', value: 'DIR', required: true, help: 'the files written by agent create' },
  devices: { type: 'string', value: 'N', help: 'simulated devices (default 13: every device kind)' },
  rate: { type: 'string', value: 'R', help: 'readings per second per device (default 1)' },
  duration: { type: 'string', value: 'S', help: 'seconds to run (default: until Ctrl-C)' },
  seed: { type: 'string', value: 'X', help: 'makes the fleet and its values repeatable (default 1)' },
  'fail-capabilities': {
    type: 'string',
    value: 'K,..',
    help: 'commands for these capabilities fail (acknowledged failed)',
  },
  'fail-rate': { type: 'string', value: 'P', help: 'each command fails with chance P, 0 to 1 (default 0)' },
  'apply-delay-ms': { type: 'string', value: 'MS', help: 'wait MS before applying a command (default 0)' },
  'ack-delay-ms': {
    type: 'string',
    value: 'MS',
    help: 'acknowledge a command MS after applying it (default 0)',
  },
  ...JSON_OUTPUT,
} as const;

/** `devcloud edge-sim`: the reference agent, for demos and load. It needs no database: it is the edge. */
export const edgeSimCommand = defineCommand({
  name: 'edge-sim',
  summary: 'run a simulated edge agent (a hub and its devices) with the files of agent create',
  details:
    'docs/edge-agent.md describes what it sends and how it answers commands. With --json a progress line every 5 s.',
  options: EDGE_SIM_OPTIONS,
  run: async ({ out, values }) => (await import('../commands/edge-sim.js')).edgeSim(out, values),
});
