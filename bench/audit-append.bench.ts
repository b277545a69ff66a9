import { randomUUID } from 'node:crypto';
import { CHAINED_EVENT_TYPES } from '../src/domain/audit/chained-events.js';
import { PostgresEventStore } from '../src/eventstore/postgres/adapter.js';
import { createPool } from '../src/infra/postgres/pool.js';
import { CpuMeter, round } from './cpu.js';
import { BENCH_APPLICATION, benchDatabase, machine, rate, report } from './support.js';

/**
 * The alternative the audit chain did not take, measured (docs/audit.md, "Where the chain is computed"):
 * chaining inside the append, by a trigger on the events table that locks the project's head, hashes the
 * event with the head and writes the link in the appending transaction. Each workload runs with and without
 * the trigger, alternated three times in one sitting: readings batches (which the trigger's WHEN clause
 * lets pass) and single control appends over 8 projects (which it chains). The trigger lives in this bench
 * only.
 */
const READINGS = Number(process.env.BENCH_AUDIT_APPEND_READINGS ?? 100_000);
const CONTROL = Number(process.env.BENCH_AUDIT_APPEND_CONTROL ?? 10_000);
const ROUNDS = 3;
const APPENDER = 'devcloud-bench-appender';

const CHAIN_IN_APPEND = `
  CREATE TABLE bench_chain_heads (project_id text PRIMARY KEY, sequence bigint NOT NULL, link bytea NOT NULL);
  CREATE TABLE bench_chain_links (
    transaction_id xid8, global_position bigint, project_id text NOT NULL, sequence bigint NOT NULL,
    link bytea NOT NULL, PRIMARY KEY (transaction_id, global_position));
  CREATE FUNCTION bench_chain_link() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE
    project text := NEW.data->>'projectId';
    head record;
    next bytea;
  BEGIN
    INSERT INTO bench_chain_heads VALUES (project, 0, sha256(convert_to('genesis:' || project, 'UTF8')))
      ON CONFLICT DO NOTHING;
    SELECT sequence, link INTO head FROM bench_chain_heads WHERE project_id = project FOR UPDATE;
    next := sha256(head.link || sha256(convert_to(
      NEW.global_position::text || NEW.event_type || NEW.stream_name || NEW.recorded_at::text || NEW.data::text,
      'UTF8')));
    UPDATE bench_chain_heads SET sequence = head.sequence + 1, link = next WHERE project_id = project;
    INSERT INTO bench_chain_links VALUES (NEW.transaction_id, NEW.global_position, project, head.sequence + 1, next);
    RETURN NEW;
  END $$;`;

const triggerOn = (types: readonly string[]) => `
  DROP TRIGGER IF EXISTS bench_chain ON eventstore.events;
  CREATE TRIGGER bench_chain AFTER INSERT ON eventstore.events FOR EACH ROW
    WHEN (NEW.event_type IN (${types.map((t) => `'${t}'`).join(', ')}))
    EXECUTE FUNCTION bench_chain_link()`;

const TRIGGER_OFF = 'DROP TRIGGER IF EXISTS bench_chain ON eventstore.events';

export async function auditAppendBenchmarks(): Promise<void> {
  const db = await benchDatabase();
  const appendPool = createPool(db.url, { max: 8, applicationName: APPENDER });
  const store = new PostgresEventStore(appendPool, { connectionString: db.url });
  const context = { machine: machine(), postgres: db.serverVersion, adapter: 'postgres' };
  try {
    await db.pool.query(CHAIN_IN_APPEND);
    let batch = 0;
    const readings = async () => {
      let next = 0;
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          while (next < READINGS) {
            const from = next;
            next += 500;
            batch++;
            await store.appendBatch(
              Array.from({ length: 500 }, (_, i) => ({
                streamName: `readings-dev${(from + i) % 100}-${batch % 7}`,
                event: { id: randomUUID(), type: 'ReadingsRecorded', data: reading(from + i) },
              })),
            );
          }
        }),
      );
      return READINGS;
    };
    const control = async () => {
      let next = 0;
      await Promise.all(
        Array.from({ length: 8 }, async (_, w) => {
          while (next < CONTROL) {
            const i = next++;
            await store.append(
              `device-bench${w}-${i % 50}`,
              [{ id: randomUUID(), type: 'CommandAccepted', data: command(i, `prj_bench${w}xxxxxx`) }],
              'any',
            );
          }
        }),
      );
      return CONTROL;
    };
    for (const [figure, workload] of [
      ['audit.in_append.readings', readings],
      ['audit.in_append.control', control],
    ] as const) {
      for (let round_ = 1; round_ <= ROUNDS; round_++) {
        for (const chained of round_ % 2 === 1 ? [false, true] : [true, false]) {
          await db.pool.query(chained ? triggerOn(CHAINED_EVENT_TYPES) : TRIGGER_OFF);
          const meter = new CpuMeter(db.pool, () => 0, [BENCH_APPLICATION]);
          await meter.start();
          const started = process.hrtime.bigint();
          const events = await workload();
          const perSecond = rate(events, started);
          const cpu = await meter.stop();
          report({
            figure,
            chainInAppend: chained,
            round: round_,
            events,
            eventsPerSecond: perSecond,
            postgresCpuUsPerEvent: round(cpu.postgresUs / events, 1),
            machineBusyShare: cpu.machineBusyShare,
            ...context,
          });
        }
      }
    }
  } finally {
    await store.close();
    await appendPool.end();
    await db.drop();
  }
}

function reading(i: number) {
  return {
    projectId: 'prj_benchreadings',
    deviceId: `dev_${(i % 100).toString(36).padStart(8, '0')}`,
    readings: [
      { capability: 'sensor.temperature', value: 20 + (i % 10), at: '2026-11-21T10:00:00.000Z' },
      { capability: 'sensor.humidity', value: 40 + (i % 7), at: '2026-11-21T10:00:00.000Z' },
      { capability: 'meter.power', value: i % 3000, at: '2026-11-21T10:00:00.000Z' },
    ],
  };
}

function command(i: number, projectId: string) {
  return {
    commandId: `cmd_${i.toString(36).padStart(10, '0')}`,
    deviceId: `dev_${(i % 50).toString(36).padStart(8, '0')}`,
    projectId,
    capability: 'actuator.relay',
    value: i % 2 === 0,
    mode: 'desired',
    acceptedAt: '2026-11-21T10:00:00.000Z',
    expiresAt: '2026-11-21T10:05:00.000Z',
    actor: { kind: 'client', clientId: 'cli_benchclient' },
  };
}
