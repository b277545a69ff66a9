import type { Role } from '../../config.js';
import { defineCommand } from '../command.js';

export const ROLES: readonly Role[] = ['api', 'ingress', 'projector', 'scheduler'];

export const serveCommand = defineCommand({
  name: 'serve',
  summary: 'run the service (all roles by default)',
  details: 'It runs until SIGINT or SIGTERM.',
  options: {
    roles: {
      type: 'string',
      value: ROLES.join(','),
      help: 'the roles this process runs, comma-separated (default: the ROLES variable, else all)',
    },
  },
  run: async ({ values }) => (await import('../commands/serve.js')).serve({ roles: values.roles }),
});
