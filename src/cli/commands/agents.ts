import path from 'node:path';
import { agentFilesFor, writeAgentFiles } from '../../agents/agent-files.js';
import { prepareAgent } from '../../agents/register.js';
import { revokeAgent } from '../../agents/revoke.js';
import type { Config } from '../../config.js';
import { loadOrCreateAuthority } from '../../ingress/pki/authority.js';
import { withCliContext } from '../context.js';
import { CliError, type Output } from '../output.js';
import { cliRefusal } from './projects.js';

/**
 * All or nothing: the agent's files are written first (writeAgentFiles refuses a directory others can write
 * to, or one holding any of them) and the agent is recorded only then; if recording fails, the files are
 * removed. So a failure leaves neither a registered agent nobody can name nor a stray key.
 */
export async function agentCreate(out: Output, options: { project: string; site: string; dir: string }) {
  const { project, site } = options;
  const dir = path.resolve(options.dir);
  await withCliContext(async ({ config, store }) => {
    const authority = await loadOrCreateAuthority(path.join(config.DATA_DIR, 'pki'));
    const prepared = await prepareAgent(
      store,
      authority,
      { projectId: project, siteId: site },
      { source: 'devcloud-cli' },
    ).catch(cliRefusal);
    const files = agentFilesFor(prepared, authority.certificatePem, brokerUrl(config));
    const written = await writeAgentFiles(dir, files).catch((error: Error) => {
      throw new CliError(`agent create: ${error.message}; nothing was registered`);
    });
    const agent = await prepared.record().catch(async (error: unknown) => {
      await written.remove();
      return cliRefusal(error);
    });
    out.result(
      { agentId: agent.agentId, hubId: agent.hubId, dir },
      `agent ${agent.agentId} (hub ${agent.hubId}) written to ${dir}`,
    );
  });
}

export async function agentRevoke(out: Output, agentId: string | undefined) {
  if (!agentId) throw new CliError('agent revoke: AGENT_ID is required');
  await withCliContext(async ({ store }) => {
    const { alreadyRevoked } = await revokeAgent(store, agentId, { source: 'devcloud-cli' }).catch(
      cliRefusal,
    );
    out.result({ agentId, revoked: true, alreadyRevoked }, `agent ${agentId} revoked`);
  });
}

/** What agents dial: MQTT_PUBLIC_URL, else this machine's broker port. */
function brokerUrl(config: Pick<Config, 'MQTT_PUBLIC_URL' | 'MQTT_PORT'>): string {
  return config.MQTT_PUBLIC_URL ?? `mqtts://localhost:${config.MQTT_PORT}`;
}
