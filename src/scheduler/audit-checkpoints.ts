import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { signCheckpoints } from '../audit/checkpoints.js';
import { activeAuditSigner } from '../audit/signing-keys.js';
import type { EventStore } from '../eventstore/port.js';
import type { Pool } from '../infra/postgres/pool.js';
import type { ScheduledJob } from './job.js';

/**
 * Signs the audit chain's moved heads every AUDIT_CHECKPOINT_INTERVAL_SECONDS (docs/audit.md), and once when
 * this instance becomes the leader, so a chain is never long unsigned after a failover.
 */
export function auditCheckpointJob(deps: {
  store: EventStore;
  pool: Pool;
  config: Pick<Config, 'AUDIT_CHECKPOINT_INTERVAL_SECONDS' | 'AUDIT_SIGNING_KEY_ENCRYPTION_KEY'>;
  logger: Logger;
  now?: () => Date;
}): ScheduledJob {
  const logger = deps.logger.child({ job: 'audit-checkpoints' });
  return {
    name: 'audit-checkpoints',
    schedule: cronEvery(deps.config.AUDIT_CHECKPOINT_INTERVAL_SECONDS),
    atStart: true,
    async run() {
      const signer = await activeAuditSigner(deps.pool, deps.config.AUDIT_SIGNING_KEY_ENCRYPTION_KEY);
      const signed = await signCheckpoints({
        store: deps.store,
        pool: deps.pool,
        signer,
        now: deps.now?.() ?? new Date(),
      });
      if (signed.length > 0)
        logger.debug({ checkpoints: signed.length, keyId: signer.keyId }, 'audit chain heads signed');
    },
  };
}

/** A node-cron schedule for an interval the config allows (a divisor of a minute, or of an hour in minutes). */
export function cronEvery(seconds: number): string {
  return seconds < 60 ? `*/${seconds} * * * * *` : `0 */${seconds / 60} * * * *`;
}
