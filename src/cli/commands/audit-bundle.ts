import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { verifyBundle } from '../../audit/bundle.js';
import { CliError, type Output } from '../output.js';
import { reportVerification } from '../verification-report.js';
import { readTrustedKeys } from '../trusted-keys.js';

/**
 * `devcloud audit verify --bundle FILE`: an exported bundle verified offline, with no database opened and
 * no configuration read (docs/audit.md, "Verifying offline"). The report is printed, then a failure exits
 * non-zero naming the first position where history differs.
 */
export async function verifyBundleFile(
  out: Output,
  options: { readonly bundle: string; readonly trustedKeys?: string },
): Promise<void> {
  if (options.trustedKeys !== undefined) await readable(options.trustedKeys, '--trusted-keys');
  const trustedKeys =
    options.trustedKeys === undefined ? undefined : await readTrustedKeys(options.trustedKeys);
  await readable(options.bundle, '--bundle');
  const lines = createInterface({ input: createReadStream(options.bundle), crlfDelay: Infinity });
  const report = await verifyBundle(lines, { trustedKeys });
  if (!out.json) {
    for (const k of report.keys)
      process.stdout.write(
        `key ${k.keyId} (${k.source}) sha256 ${k.fingerprint}: signed ${k.checkpoints} checkpoints\n`,
      );
  }
  reportVerification(out, report, { projectId: report.projectId, keys: report.keys });
}

async function readable(file: string, option: string): Promise<void> {
  const found = await stat(file).catch(() => undefined);
  if (!found?.isFile()) throw new CliError(`audit verify: ${option} ${file}: no such file`);
}
