import { randomUUID } from 'node:crypto';
import { PostgresEventStore } from '../src/eventstore/postgres/adapter.js';
import { auditChainProjector } from '../src/projections/audit-chain/projector.js';
import { catchUpProjector } from '../src/projections/catch-up.js';
import { benchDatabase, machine, rate, report, samplePayload } from './support.js';

/**
 * The audit chain's projector over a history it has never seen, as on the first start of a version that
 * brings it (docs/deployment.md, "Upgrading"): BENCH_AUDIT_EVENTS control events (100,000 by default) of
 * 100 projects, then one catch-up in batches of PROJECTION_BATCH_SIZE's default. Reports events per second.
 */
const EVENTS = Number(process.env.BENCH_AUDIT_EVENTS ?? 100_000);
const BATCH = 10_000;

export async function auditChainBenchmarks(): Promise<void> {
  const db = await benchDatabase();
  const store = new PostgresEventStore(db.pool, { connectionString: db.url });
  try {
    for (let written = 0; written < EVENTS; written += BATCH) {
      const count = Math.min(BATCH, EVENTS - written);
      await store.appendBatch(
        Array.from({ length: count }, (_, k) => {
          const i = written + k;
          const data = { ...samplePayload(i), projectId: `prj_${i % 100}`, commandId: `cmd_${i}` };
          return {
            streamName: `device-${data.deviceId}`,
            event: { id: randomUUID(), type: 'CommandAccepted', data },
          };
        }),
      );
    }
    const started = process.hrtime.bigint();
    await catchUpProjector(db.pool, store, auditChainProjector(), BATCH, undefined, 3_600_000);
    const eventsPerSecond = rate(EVENTS, started);
    report({
      figure: 'audit.chain.first-start',
      events: EVENTS,
      eventsPerSecond,
      seconds: Math.round((EVENTS / eventsPerSecond) * 10) / 10,
      machine: machine(),
      postgres: db.serverVersion,
    });
  } finally {
    await store.close();
    await db.drop();
  }
}
