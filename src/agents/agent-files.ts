import { link, lstat, mkdir, mkdtemp, open, readFile, rm, rmdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { RegisteredAgent } from './register.js';

/**
 * The files `devcloud agent create` hands to an edge agent, and how an agent reads them back. The private
 * key is written with mode 0600 at creation and never passes through a logger.
 */
const AGENT_FILES = {
  ca: 'ca.pem',
  cert: 'cert.pem',
  key: 'key.pem',
  connection: 'agent.json',
} as const;

const agentConnectionSchema = z.object({
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

type AgentConnection = z.infer<typeof agentConnectionSchema>;

export interface AgentFiles {
  readonly connection: AgentConnection;
  readonly caPem: string;
  readonly certPem: string;
  readonly keyPem: string;
}

/** The files handed to a freshly registered agent that dials `brokerUrl`. */
export function agentFilesFor(
  agent: Omit<RegisteredAgent, 'position'>,
  caPem: string,
  brokerUrl: string,
): AgentFiles {
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

/** Files written by writeAgentFiles, until the agent they are for is registered. */
export interface WrittenAgentFiles {
  /** Removes the files written (registering the agent failed): the directory is left as it was found. */
  remove(): Promise<void>;
}

/** Why agent files were not written; nothing was left behind. */
class AgentFilesRefused extends Error {
  override readonly name = 'AgentFilesRefused';
}

/**
 * Writes an agent's files into `dir` all or nothing. `dir` is created (0700) if missing; an existing one
 * must be a directory that others cannot write to (anyone who can could swap a file for a symlink, or read
 * the key through one), and must hold none of the four names, not even as a symlink. The files are written
 * to a fresh 0700 directory inside `dir` first (same filesystem; each created exclusively, the key 0600 from
 * its first byte) and then hard-linked into place: a link never replaces or follows what is already there,
 * so a file that appears meanwhile makes the write fail, and every file linked so far is removed again.
 */
export async function writeAgentFiles(dir: string, files: AgentFiles): Promise<WrittenAgentFiles> {
  const createdDir = await prepareDirectory(dir);
  const contents: [string, string, number][] = [
    [AGENT_FILES.key, files.keyPem, 0o600],
    [AGENT_FILES.cert, files.certPem, 0o644],
    [AGENT_FILES.ca, files.caPem, 0o644],
    [AGENT_FILES.connection, JSON.stringify(files.connection, null, 2) + '\n', 0o644],
  ];
  const linked: string[] = [];
  const remove = async () => {
    await Promise.all(linked.map((file) => rm(file, { force: true })));
    if (createdDir) await rmdir(dir).catch(() => undefined);
  };
  const staging = await mkdtemp(path.join(dir, '.agent-files-'));
  try {
    for (const [name, content, mode] of contents) await writeNew(path.join(staging, name), content, mode);
    for (const [name] of contents) {
      const target = path.join(dir, name);
      await link(path.join(staging, name), target).catch((error: NodeJS.ErrnoException) => {
        throw error.code === 'EEXIST' ? new AgentFilesRefused(`${target} already exists`) : error;
      });
      linked.push(target);
    }
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    await remove();
    throw error;
  }
  await rm(staging, { recursive: true, force: true });
  return { remove };
}

/** Creates `dir` (0700), or checks an existing one; true when it was created here. */
async function prepareDirectory(dir: string): Promise<boolean> {
  const existing = await stat(dir).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (!existing) {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    return true;
  }
  if (!existing.isDirectory()) throw new AgentFilesRefused(`${dir} is not a directory`);
  if ((existing.mode & 0o002) !== 0) {
    throw new AgentFilesRefused(
      `${dir} is writable by every user: choose a directory only its owner can write to`,
    );
  }
  for (const name of Object.values(AGENT_FILES)) {
    const file = path.join(dir, name);
    if (await lstat(file).catch(() => undefined)) throw new AgentFilesRefused(`${file} already exists`);
  }
  return false;
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
