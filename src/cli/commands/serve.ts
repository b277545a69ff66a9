import { loadConfig, type Role } from '../../config.js';
import { createLogger } from '../../infra/logger.js';
import type { ProjectedBatchMessage } from '../../runtime/projector-process.js';
import { ROLES } from '../declarations/serve.js';
import { CliError } from '../output.js';

/** `devcloud serve`: the service's roles in this process, until SIGINT or SIGTERM (or its parent is gone). */
export async function serve(options: { roles?: string }): Promise<void> {
  const config = loadConfig();
  const roles = options.roles ? parseRoles(options.roles) : config.ROLES;
  const logger = createLogger(config.LOG_LEVEL);
  const apart = config.PROJECTOR_PROCESS === 'process' && roles.includes('projector') && roles.length > 1;
  // Started by a parent service (its projector process): when the parent is gone, so is the reason to run.
  // Watched from the first moment: a parent killed while this process was still starting must stop it too.
  const isChild = process.send !== undefined;
  const parentGone = isChild ? watchParent() : undefined;
  // Loaded here, not at the top: a bad configuration or --roles is refused without loading the whole
  // service (HTTP, broker, projectors) first.
  const { startService } = await import('../../runtime/service.js');
  const service = await startService(config, logger, roles, {
    projectorProcessEntry: apart ? process.argv[1] : undefined,
    // A projector child (src/runtime/projector-process.ts) reports its batches for its parent's /metrics.
    onProjectedBatch: isChild
      ? (projector, events) => {
          const message: ProjectedBatchMessage = { kind: 'projected', projector, events };
          if (process.connected) process.send?.(message);
        }
      : undefined,
  });
  await new Promise<void>((resolve) => {
    const shutdown = (reason: string) => {
      logger.info({ reason }, 'shutdown requested');
      service.stop().then(resolve, (error: unknown) => {
        logger.error({ err: error }, 'unclean shutdown');
        process.exitCode = 1;
        resolve();
      });
    };
    process.once('SIGINT', shutdown);
    process.once('SIGTERM', shutdown);
    void parentGone?.then(() => shutdown('parent process gone'));
  });
  // An open IPC channel would keep this process alive until its parent gave up waiting and killed it.
  if (process.connected) process.disconnect();
}

/**
 * Resolves once the parent's IPC channel has closed (at once if it already has). The output went through the
 * parent, so from then on log lines have nowhere to go: they are dropped (EPIPE) rather than let a write
 * error end the process before its batch has committed.
 */
function watchParent(): Promise<void> {
  return new Promise((resolve) => {
    const gone = () => {
      for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {});
      resolve();
    };
    if (process.connected) process.once('disconnect', gone);
    else gone();
  });
}

function parseRoles(list: string): Role[] {
  const roles = list.split(',').map((r) => r.trim());
  const unknown = roles.filter((r) => !ROLES.includes(r as Role));
  if (unknown.length > 0 || roles.length === 0) {
    throw new CliError(
      `--roles: unknown role ${unknown.join(', ') || '(none)'}; allowed: ${ROLES.join(', ')}`,
    );
  }
  return roles as Role[];
}
