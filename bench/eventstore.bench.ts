import { randomUUID } from 'node:crypto';
import { PostgresEventStore } from '../src/eventstore/postgres/adapter.js';
import { auditProjector } from '../src/projections/audit/projector.js';
import { rebuildProjector } from '../src/projections/rebuild.js';
import { benchDatabase, inBatches, machine, rate, report, samplePayload } from './support.js';

/**
 * Event-store and projection figures on the Postgres adapter: single-event appends, batched appends (which
 * also seed TOTAL events), reading the global order, and rebuilding the audit projection over all of them.
 */
const TOTAL = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const BATCH = 1000;
const WRITERS = 4;
const TYPE = 'BenchFact';

export async function eventStoreBenchmarks(): Promise<void> {
  const db = await benchDatabase();
  const store = new PostgresEventStore(db.pool, { connectionString: db.url });
  const context = { machine: machine(), postgres: db.serverVersion, adapter: 'postgres' };
  try {
    // Single event per append, 8 concurrent writers each on its own stream.
    const singles = 20_000;
    let started = process.hrtime.bigint();
    await Promise.all(
      Array.from({ length: 8 }, async (_, w) => {
        for (let i = 0; i < singles / 8; i++) {
          await store.append(
            `single-${w}`,
            [{ id: randomUUID(), type: 'BenchSingle', data: samplePayload(i) }],
            'any',
          );
        }
      }),
    );
    report({
      figure: 'eventstore.append.single',
      events: singles,
      writers: 8,
      eventsPerSecond: rate(singles, started),
      ...context,
    });

    // Batched: 1,000 events per append, 4 concurrent writers, TOTAL events in all.
    started = process.hrtime.bigint();
    await inBatches(TOTAL, BATCH, WRITERS, (from, count) =>
      store.append(
        `batch-${from / BATCH}`,
        Array.from({ length: count }, (_, i) => ({
          id: randomUUID(),
          type: TYPE,
          data: samplePayload(from + i),
        })),
        'no_stream',
      ),
    );
    report({
      figure: 'eventstore.append.batched',
      events: TOTAL,
      batchSize: BATCH,
      writers: WRITERS,
      eventsPerSecond: rate(TOTAL, started),
      ...context,
    });

    // Ingest batches: 500 events over 100 device streams per statement, 4 concurrent writers.
    const ingest = Math.min(TOTAL, 200_000);
    started = process.hrtime.bigint();
    let nextIngest = 0;
    await Promise.all(
      Array.from({ length: WRITERS }, async () => {
        while (nextIngest < ingest) {
          const from = nextIngest;
          nextIngest += 500;
          await store.appendBatch(
            Array.from({ length: 500 }, (_, i) => ({
              streamName: `readings-dev${(from + i) % 100}`,
              event: { id: randomUUID(), type: 'BenchReading', data: samplePayload(from + i) },
            })),
          );
        }
      }),
    );
    report({
      figure: 'eventstore.append.ingest_batch',
      events: ingest,
      batchSize: 500,
      streamsPerBatch: 100,
      writers: WRITERS,
      eventsPerSecond: rate(ingest, started),
      ...context,
    });

    // Reading the whole global order in pages.
    started = process.hrtime.bigint();
    let after: string | undefined;
    let read = 0;
    for (;;) {
      const page = await store.readAll({ after, maxCount: 5000 });
      read += page.events.length;
      after = page.lastPosition ?? after;
      if (page.atEnd) break;
    }
    report({
      figure: 'eventstore.read.global',
      events: read,
      pageSize: 5000,
      eventsPerSecond: rate(read, started),
      ...context,
    });

    // Rebuilding a projection from all of them.
    const projector = auditProjector([TYPE]);
    started = process.hrtime.bigint();
    const result = await rebuildProjector(db.pool, store, projector, { batchSize: 5000 });
    report({
      figure: 'projection.rebuild.audit',
      projector: projector.name,
      events: result.eventsApplied,
      batchSize: 5000,
      eventsPerSecond: rate(result.eventsApplied, started),
      ...context,
    });
  } finally {
    await store.close();
    await db.drop();
  }
}
