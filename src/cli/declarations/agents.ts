import { defineCommand, JSON_OUTPUT, type CommandGroup } from '../command.js';

export const agentCommands: CommandGroup = {
  name: 'agent',
  summary: 'edge agents: the hubs that connect to the MQTT broker (docs/edge-agent.md)',
  subcommands: [
    defineCommand({
      name: 'create',
      summary: 'register an edge agent and its hub; write its certificate, key and connection file into DIR',
      options: {
        project: { type: 'string', value: 'ID', required: true, help: 'the project' },
        site: { type: 'string', value: 'ID', required: true, help: 'the site of its hub' },
        out: {
          type: 'string',
          value: 'DIR',
          required: true,
          help: 'where to write its files: none of them may exist there, and only its owner may write to it',
        },
        ...JSON_OUTPUT,
      },
      run: async ({ out, values }) =>
        (await import('../commands/agents.js')).agentCreate(out, {
          project: values.project!,
          site: values.site!,
          dir: values.out!,
        }),
    }),
    defineCommand({
      name: 'revoke',
      args: ['AGENT_ID'],
      summary: 'refuse the agent at the broker from now on',
      details: 'Its open connections are closed.',
      options: JSON_OUTPUT,
      run: async ({ out, args }) => (await import('../commands/agents.js')).agentRevoke(out, args[0]),
    }),
  ],
};
