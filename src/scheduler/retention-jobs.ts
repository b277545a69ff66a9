import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { EventStore } from '../eventstore/port.js';
import type { Pool } from '../infra/postgres/pool.js';
import { deleteExpiredReadings } from '../ingress/readings/retention.js';
import { applyTelemetryRetention } from '../projections/telemetry/retention.js';
import type { ScheduledJob } from './job.js';

type RetentionConfig = Pick<
  Config,
  | 'READINGS_RETENTION_DAYS'
  | 'TELEMETRY_RAW_RETENTION_DAYS'
  | 'TELEMETRY_1M_RETENTION_DAYS'
  | 'TELEMETRY_1H_RETENTION_DAYS'
  | 'TELEMETRY_1D_RETENTION_DAYS'
>;

/**
 * Hourly retention: reading events in the event store, then raw telemetry and each bucket table (whose
 * coming partitions are created at the same time). Both stop between steps when this instance stops being
 * the active scheduler.
 */
export function retentionJobs(deps: {
  store: EventStore;
  pool: Pool;
  config: RetentionConfig;
  logger: Logger;
  now?: () => Date;
}): ScheduledJob[] {
  const { config } = deps;
  const now = () => deps.now?.().getTime() ?? Date.now();
  const logger = deps.logger.child({ job: 'retention' });
  return [
    {
      name: 'readings-retention',
      schedule: '17 * * * *',
      atStart: false,
      async run(leadership) {
        const result = await deleteExpiredReadings(deps.store, {
          retentionDays: config.READINGS_RETENTION_DAYS,
          now: now(),
          signal: leadership,
        });
        if (result.deleted > 0) logger.info(result, 'expired reading events deleted');
      },
    },
    {
      name: 'telemetry-retention',
      schedule: '47 * * * *',
      atStart: false,
      async run(leadership) {
        const report = await applyTelemetryRetention(deps.pool, {
          retention: {
            rawDays: config.TELEMETRY_RAW_RETENTION_DAYS,
            minuteDays: config.TELEMETRY_1M_RETENTION_DAYS,
            hourDays: config.TELEMETRY_1H_RETENTION_DAYS,
            dayDays: config.TELEMETRY_1D_RETENTION_DAYS,
          },
          now: now(),
          signal: leadership,
        });
        if (report.dropped.length > 0 || Object.values(report.deleted).some((n) => n > 0))
          logger.info(report, 'expired telemetry dropped');
        for (const failure of report.failed)
          logger.warn(failure, 'telemetry retention step failed; the next run tries again');
      },
    },
  ];
}
