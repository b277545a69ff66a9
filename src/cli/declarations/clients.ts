import { SCOPES } from '../../domain/identity/scopes.js';
import { defineCommand, JSON_OUTPUT, type CommandGroup } from '../command.js';

const PROJECT = { type: 'string', value: 'ID', required: true, help: 'the project' } as const;

export const clientCommands: CommandGroup = {
  name: 'client',
  summary: "a project's OAuth clients",
  subcommands: [
    defineCommand({
      name: 'create',
      summary: 'create an OAuth client; its secret is shown once',
      details: 'Only a hash of the secret is stored.',
      options: {
        project: PROJECT,
        scopes: {
          type: 'string',
          value: '"S1 S2"',
          required: true,
          help: `what it may do, separated by spaces or commas, from: ${SCOPES.join(' ')}`,
        },
        auth: {
          type: 'string',
          value: 'post|basic',
          help: 'how it sends its secret to the token endpoint (default post)',
        },
        name: { type: 'string', value: 'N', help: 'a name to tell it by' },
        ...JSON_OUTPUT,
      },
      run: async ({ out, values }) =>
        (await import('../commands/clients.js')).clientCreate(out, {
          ...values,
          project: values.project!,
          scopes: values.scopes!,
        }),
    }),
    defineCommand({
      name: 'list',
      summary: "a project's clients (never secrets)",
      options: { project: PROJECT, ...JSON_OUTPUT },
      run: async ({ out, values }) =>
        (await import('../commands/clients.js')).clientList(out, values.project!),
    }),
    defineCommand({
      name: 'revoke',
      args: ['CLIENT_ID'],
      summary: 'revoke a client and its tokens',
      options: JSON_OUTPUT,
      run: async ({ out, args }) => (await import('../commands/clients.js')).clientRevoke(out, args[0]),
    }),
  ],
};
