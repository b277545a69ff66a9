import path from 'node:path';
import { agentFilesFor, assertNoAgentIn, writeAgentFiles } from '../../agents/agent-files.js';
import { registerAgent } from '../../agents/register.js';
import { revokeAgent } from '../../agents/revoke.js';
import type { Config } from '../../config.js';
import { loadOrCreateAuthority } from '../../ingress/pki/authority.js';
import { withCliContext } from '../context.js';
import { CliError, type Output } from '../output.js';
import { cliRefusal } from './projects.js';

export const AGENTS_USAGE = `  agent create --project ID --site ID --out DIR     register an edge agent and its hub; write its
                                                    certificate, key and connection file into DIR
  agent revoke AGENT_ID                             refuse the agent at the broker from now on`;

export async function agentCommand(
  out: Output,
  sub: string | undefined,
  arg: string | undefined,
  options: { project?: string; site?: string; out?: string },
): Promise<void> {
  if (sub === 'create') return agentCreate(out, options);
  if (sub === 'revoke') return agentRevoke(out, arg);
  throw new CliError(`agent: expected create or revoke, got ${sub ?? 'nothing'}`);
}

async function agentCreate(out: Output, options: { project?: string; site?: string; out?: string }) {
  const { project, site } = options;
  if (!project || !site || !options.out) {
    throw new CliError('agent create: --project ID, --site ID and --out DIR are required');
  }
  const dir = path.resolve(options.out);
  await assertNoAgentIn(dir).catch((error: Error) => {
    throw new CliError(`agent create: ${error.message}`);
  });
  await withCliContext(async ({ config, store }) => {
    const authority = await loadOrCreateAuthority(path.join(config.DATA_DIR, 'pki'));
    const agent = await registerAgent(
      store,
      authority,
      { projectId: project, siteId: site },
      { source: 'devcloud-cli' },
    ).catch(cliRefusal);
    await writeAgentFiles(dir, agentFilesFor(agent, authority.certificatePem, brokerUrl(config)));
    out.result(
      { agentId: agent.agentId, hubId: agent.hubId, dir },
      `agent ${agent.agentId} (hub ${agent.hubId}) written to ${dir}`,
    );
  });
}

async function agentRevoke(out: Output, agentId: string | undefined) {
  if (!agentId) throw new CliError('agent revoke: AGENT_ID is required');
  await withCliContext(async ({ store }) => {
    const { alreadyRevoked } = await revokeAgent(store, agentId, { source: 'devcloud-cli' }).catch(
      cliRefusal,
    );
    out.result({ agentId, revoked: true, alreadyRevoked }, `agent ${agentId} revoked`);
  });
}

/** What agents dial: MQTT_PUBLIC_URL, else this machine's broker port. */
export function brokerUrl(config: Pick<Config, 'MQTT_PUBLIC_URL' | 'MQTT_PORT'>): string {
  return config.MQTT_PUBLIC_URL ?? `mqtts://localhost:${config.MQTT_PORT}`;
}
