import { open, rm, writeFile } from 'node:fs/promises';
import { AuditExportRefused, exportBundle, type ExportSummary } from '../../audit/export.js';
import { keyFileText } from '../../audit/key-file.js';
import { auditPublicKeys, rotateAuditKeys } from '../../audit/signing-keys.js';
import { newestByProject, storedCheckpoints } from '../../audit/stored-checkpoints.js';
import { withCliContext } from '../context.js';
import { instant } from '../instant.js';
import { CliError, type Output } from '../output.js';
import { formatTable } from '../table.js';

/**
 * What `devcloud audit export|head|keys` runs: what an auditor takes out of the system (docs/audit.md, "The
 * auditor's procedure"): a bundle to verify offline, the newest signed heads, and the public keys to trust.
 */
export async function auditExport(
  out: Output,
  options: { project?: string; from?: string; to?: string; out?: string },
): Promise<void> {
  const from = instant('audit export', '--from', options.from);
  const to = instant('audit export', '--to', options.to);
  const file = await open(options.out!, 'w');
  let summary: ExportSummary;
  try {
    summary = await withCliContext(async ({ store, database }) => {
      let buffered: string[] = [];
      const flush = async () => {
        await file.write(buffered.join(''));
        buffered = [];
      };
      const done = await exportBundle(
        { store, pool: database.pool },
        { projectId: options.project!, from, to },
        async (line) => {
          buffered.push(line + '\n');
          if (buffered.length >= 1000) await flush();
        },
      );
      await flush();
      return done;
    });
  } catch (error) {
    // No half-written bundle is left behind to be mistaken for one.
    await file.close();
    await rm(options.out!, { force: true });
    if (error instanceof AuditExportRefused) throw new CliError(`audit export: ${error.message}`);
    throw error;
  }
  await file.close();
  out.result(
    { file: options.out, ...summary },
    `${options.out}: ${summary.events} events, ${summary.checkpoints} checkpoints (the last #${summary.end.sequence}, ` +
      `${summary.end.count} events), ${summary.keys} keys`,
  );
}

export async function auditHead(out: Output, projectId: string | undefined): Promise<void> {
  const newest = await withCliContext(async ({ store }) =>
    newestByProject(await storedCheckpoints(store, projectId)),
  );
  if (newest.size === 0 && !out.json) process.stdout.write('(no checkpoint signed yet)\n');
  for (const { eventPosition, checkpoint } of [...newest.values()].sort((a, b) =>
    a.checkpoint.projectId < b.checkpoint.projectId ? -1 : 1,
  )) {
    out.result(
      { ...checkpoint, eventPosition },
      `${checkpoint.projectId} checkpoint #${checkpoint.sequence} signed ${checkpoint.signedAt}: ${checkpoint.count} ` +
        `events up to ${checkpoint.position}\n  head ${checkpoint.head}\n  key ${checkpoint.keyId} ` +
        `(${checkpoint.algorithm})\n  signature ${checkpoint.signature}`,
    );
  }
}

export async function auditKeys(
  out: Output,
  action: string | undefined,
  file: string | undefined,
): Promise<void> {
  if (action !== 'list' && action !== 'rotate' && action !== 'export') {
    throw new CliError(`audit keys: expected list, rotate or export, got ${action ?? 'nothing'}`);
  }
  if (file !== undefined && action !== 'export')
    throw new CliError(`audit keys ${action} does not take --out`);
  await withCliContext(async ({ config, database }) => {
    if (action === 'rotate') {
      const rotation = await rotateAuditKeys(database.pool, config.AUDIT_SIGNING_KEY_ENCRYPTION_KEY);
      out.result(
        rotation,
        `signing checkpoints with ${rotation.keyId}; retired ${rotation.retired.join(', ') || 'none'}`,
      );
      return;
    }
    const keys = await auditPublicKeys(database.pool);
    if (action === 'export') {
      if (file === undefined) process.stdout.write(keyFileText(keys));
      else {
        await writeFile(file, keyFileText(keys));
        out.result({ file, keys: keys.map((k) => k.keyId) }, `${file}: ${keys.length} audit public keys`);
      }
      return;
    }
    if (out.json) for (const key of keys) out.result({ ...key });
    else if (keys.length === 0) process.stdout.write('(no audit key yet: the scheduler makes one)\n');
    else {
      process.stdout.write(
        formatTable(
          ['keyId', 'algorithm', 'createdAt', 'retiredAt'],
          keys.map((k) => [k.keyId, k.algorithm, k.createdAt, k.retiredAt ?? 'active']),
        ) + '\n',
      );
    }
  });
}
