import type { VerificationReport } from '../domain/audit/verification.js';
import { CliError, type Output } from './output.js';
import { formatTable } from './table.js';

/**
 * How `devcloud audit verify` reports, from the database or from a bundle: one JSON line with --json, a
 * table of the projects and the findings otherwise; then, when anything was found, a non-zero exit naming
 * the first finding (its kind, project, position and what differs).
 */
export function reportVerification(
  out: Output,
  report: VerificationReport,
  extra: Record<string, unknown> = {},
): void {
  if (out.json) {
    out.result({ ...report, ...extra });
  } else {
    const rows = report.projects.map((p) => [
      p.projectId,
      String(p.events),
      p.lastCheckpoint ? `#${p.lastCheckpoint.sequence} ${p.lastCheckpoint.signedAt}` : 'none',
      String(p.unsigned),
      p.head.slice(0, 16),
    ]);
    if (rows.length > 0) {
      process.stdout.write(
        formatTable(['project', 'events', 'last checkpoint', 'unsigned', 'head'], rows) + '\n',
      );
    }
    for (const f of report.findings)
      process.stdout.write(`${f.kind} in ${f.projectId} at ${f.position}: ${f.message}\n`);
    process.stdout.write(
      `${report.ok ? 'verified' : 'FAILED'}: ${report.events} events, ${report.checkpoints} checkpoints matched, ` +
        `${report.findings.length} findings\n`,
    );
  }
  const first = report.findings[0];
  if (first) {
    throw new CliError(
      `audit verify: ${first.kind} in project ${first.projectId} at position ${first.position}: ${first.message}`,
    );
  }
}

/** Progress of a long verification, on stderr (stdout carries only the answer). */
export function progressOnStderr(events: number): void {
  process.stderr.write(`audit verify: ${events} events checked\n`);
}
