import { mkdir, open, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { RegisteredAgent } from './register.js';

/**
 * The files `devcloud agent create` hands to an edge agent, and how an agent reads them back. The private
 * key is written with mode 0600 at creation and never passes through a logger.
 */
export const AGENT_FILES = {
  ca: 'ca.pem',
  cert: 'cert.pem',
  key: 'key.pem',
  connection: 'agent.json',
} as const;

export const agentConnectionSchema = z.object({
  version: z.literal(1),
  /** mqtts://host:port of the cloud broker. */
  brokerUrl: z.string().regex(/^mqtts:\/\//),
  agentId: z.string(),
  hubId: z.string(),
  projectId: z.string(),
  siteId: z.string(),
  /** The site's IANA timezone: daily counters reset at its local midnight. */
  timezone: z.string(),
});

export type AgentConnection = z.infer<typeof agentConnectionSchema>;

export interface AgentFiles {
  readonly connection: AgentConnection;
  readonly caPem: string;
  readonly certPem: string;
  readonly keyPem: string;
}

/** The files handed to a freshly registered agent that dials `brokerUrl`. */
export function agentFilesFor(agent: RegisteredAgent, caPem: string, brokerUrl: string): AgentFiles {
  return {
    caPem,
    certPem: agent.certificate.certPem,
    keyPem: agent.certificate.keyPem,
    connection: {
      version: 1,
      brokerUrl,
      agentId: agent.agentId,
      hubId: agent.hubId,
      projectId: agent.projectId,
      siteId: agent.siteId,
      timezone: agent.timezone,
    },
  };
}

/** Refuses a directory that already holds an agent's key, so one agent's identity is never overwritten. */
export async function assertNoAgentIn(dir: string): Promise<void> {
  const existing = await stat(path.join(dir, AGENT_FILES.key)).catch(() => undefined);
  if (existing) throw new Error(`${dir} already holds an agent key (${AGENT_FILES.key})`);
}

export async function writeAgentFiles(dir: string, files: AgentFiles): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeNew(path.join(dir, AGENT_FILES.key), files.keyPem, 0o600);
  await writeNew(path.join(dir, AGENT_FILES.cert), files.certPem, 0o644);
  await writeNew(path.join(dir, AGENT_FILES.ca), files.caPem, 0o644);
  await writeNew(
    path.join(dir, AGENT_FILES.connection),
    JSON.stringify(files.connection, null, 2) + '\n',
    0o644,
  );
}

export async function readAgentFiles(dir: string): Promise<AgentFiles> {
  const read = (name: string) => readFile(path.join(dir, name), 'utf8');
  const connection = agentConnectionSchema.parse(JSON.parse(await read(AGENT_FILES.connection)));
  return {
    connection,
    caPem: await read(AGENT_FILES.ca),
    certPem: await read(AGENT_FILES.cert),
    keyPem: await read(AGENT_FILES.key),
  };
}

async function writeNew(file: string, content: string, mode: number): Promise<void> {
  // 'wx' with the mode: the key is never readable by others, not even for an instant, and never clobbered.
  const handle = await open(file, 'wx', mode);
  try {
    await handle.writeFile(content, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
}
