import { signCheckpoints } from '../../src/audit/checkpoints.js';
import { activeAuditSigner } from '../../src/audit/signing-keys.js';
import { verifyStoredHistory } from '../../src/audit/verify.js';
import type { EventStore } from '../../src/eventstore/port.js';
import type { Pool } from '../../src/infra/postgres/pool.js';
import { catchUpProjector } from '../../src/projections/catch-up.js';
import { auditChainProjector } from '../../src/projections/audit-chain/projector.js';
import { verdict, type SoakCheck } from './checks.js';

const CHECKPOINTS = `SELECT count(*)::int AS n FROM eventstore.events WHERE event_type = 'AuditCheckpointSigned'`;

/**
 * After the kills: the audit chain is brought to the head, what the service's own scheduler left unsigned
 * is signed, and the whole history verifies against every checkpoint, those signed while roles were being
 * killed included (docs/audit.md).
 */
export async function checkAuditHistory(pool: Pool, store: EventStore): Promise<SoakCheck> {
  const signedByService = (await pool.query<{ n: number }>(CHECKPOINTS)).rows[0]!.n;
  await catchUpProjector(pool, store, auditChainProjector());
  await signCheckpoints({ store, pool, signer: await activeAuditSigner(pool), now: new Date() });
  const report = await verifyStoredHistory({ store, pool });
  const first = report.findings[0];
  return verdict(
    'the audit history verifies',
    report.ok,
    `${report.events} chained events, ${report.checkpoints} checkpoints matched (${signedByService} signed by ` +
      `the service's scheduler during the run); ` +
      (first ? `first finding: ${first.kind} at ${first.position}: ${first.message}` : 'no finding'),
  );
}
