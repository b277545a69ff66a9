import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import { isAuditPublicKey, verifyBundle, type BundleReport } from '../../audit/bundle.js';
import type { AuditPublicKey } from '../../audit/signing-keys.js';
import { CliError, type Output } from '../output.js';

/**
 * `devcloud audit verify --bundle FILE`: an exported bundle verified offline, with no database opened and
 * no configuration read (docs/audit.md, "Verifying offline"). The report is printed, then a failure exits
 * non-zero naming the first position where history differs.
 */
export async function verifyBundleFile(
  out: Output,
  options: { readonly bundle: string; readonly trustedKeys?: string },
): Promise<void> {
  const trustedKeys =
    options.trustedKeys === undefined ? undefined : await readTrustedKeys(options.trustedKeys);
  await readable(options.bundle, '--bundle');
  const lines = createInterface({ input: createReadStream(options.bundle), crlfDelay: Infinity });
  const report = await verifyBundle(lines, { trustedKeys });
  printReport(out, report);
  const first = report.findings[0];
  if (first) throw new CliError(`audit verify: ${first.kind} at ${first.position}: ${first.message}`);
}

/** The file `devcloud audit keys export` writes: `{"format", "keys": [...]}`, every audit key's public part. */
const trustedKeysFile = z.object({
  format: z.literal('devcloud-audit-keys/1').optional(),
  keys: z.array(
    z.object({
      keyId: z.string(),
      algorithm: z.literal('Ed25519'),
      publicKey: z.string(),
      createdAt: z.string(),
      retiredAt: z.string().nullable(),
    }),
  ),
});

async function readTrustedKeys(file: string): Promise<AuditPublicKey[]> {
  await readable(file, '--trusted-keys');
  let parsed;
  try {
    parsed = trustedKeysFile.safeParse(JSON.parse(await readFile(file, 'utf8')));
  } catch {
    throw new CliError(`audit verify: --trusted-keys ${file} is not JSON`);
  }
  if (!parsed.success) {
    throw new CliError(
      `audit verify: --trusted-keys ${file} is not a list of audit keys (audit keys export)`,
    );
  }
  for (const key of parsed.data.keys) {
    if (!isAuditPublicKey(key.publicKey)) {
      throw new CliError(
        `audit verify: --trusted-keys ${file}: key ${key.keyId} holds no Ed25519 public key`,
      );
    }
  }
  return parsed.data.keys;
}

async function readable(file: string, option: string): Promise<void> {
  const found = await stat(file).catch(() => undefined);
  if (!found?.isFile()) throw new CliError(`audit verify: ${option} ${file}: no such file`);
}

function printReport(out: Output, report: BundleReport): void {
  if (out.json) {
    out.result({ ...report });
    return;
  }
  const lines = [
    `bundle of project ${report.projectId ?? '(unknown)'}: ${report.events} events, ` +
      `${report.checkpoints} checkpoints matched`,
    ...report.keys.map(
      (k) => `key ${k.keyId} (${k.source}) sha256 ${k.fingerprint}: signed ${k.checkpoints} checkpoints`,
    ),
    ...report.findings.map((f) => `${f.kind} at ${f.position}: ${f.message}`),
    report.ok ? 'verified: every checkpoint matches the history' : 'NOT verified',
  ];
  process.stdout.write(lines.join('\n') + '\n');
}
