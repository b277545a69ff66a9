import { randomUUID } from 'node:crypto';
import { signCheckpoints } from '../src/audit/checkpoints.js';
import { activeAuditSigner } from '../src/audit/signing-keys.js';
import { verifyStoredHistory } from '../src/audit/verify.js';
import type { BatchEntry } from '../src/eventstore/port.js';
import { PostgresEventStore } from '../src/eventstore/postgres/adapter.js';
import { auditChainProjector } from '../src/projections/audit-chain/projector.js';
import { catchUpProjector } from '../src/projections/catch-up.js';
import { machineBusy, processCpuUs, round } from './cpu.js';
import { benchDatabase, inBatches, machine, rate, report } from './support.js';

/**
 * The audit chain over BENCH_AUDIT_EVENTS control events (1,000,000 by default) of 100 projects: commands
 * accepted and sent as the control plane records them, appended in batches. Two figures: the chain's
 * projector chaining them (the work done after the append, off the append path), and `audit verify`
 * recomputing every chain from the vacuumed and analysed store and holding it against the stored links and
 * the checkpoints, with its threads (BENCH_AUDIT_THREADS, by default one a core) and the CPU an event cost
 * this process.
 */
const TOTAL = Number(process.env.BENCH_AUDIT_EVENTS ?? 1_000_000);
const PROJECTS = 100;
const DEVICES_PER_PROJECT = 50;
const BATCH = 5000;
const WRITERS = 2;
/** audit verify's threads (--threads); by default, as the CLI's: one a core. */
const THREADS =
  process.env.BENCH_AUDIT_THREADS === undefined ? undefined : Number(process.env.BENCH_AUDIT_THREADS);

export async function auditBenchmarks(): Promise<void> {
  const db = await benchDatabase();
  const store = new PostgresEventStore(db.pool, { connectionString: db.url });
  const context = { machine: machine(), postgres: db.serverVersion, projects: PROJECTS };
  try {
    await inBatches(TOTAL, BATCH, WRITERS, (from, count) =>
      store.appendBatch(Array.from({ length: count }, (_, i) => controlEvent(from + i))),
    );

    let started = process.hrtime.bigint();
    await catchUpProjector(db.pool, store, auditChainProjector(), 10_000, undefined, 3_600_000);
    report({ figure: 'audit.chain', events: TOTAL, eventsPerSecond: rate(TOTAL, started), ...context });
    const signed = await signCheckpoints({
      store,
      pool: db.pool,
      signer: await activeAuditSigner(db.pool),
      now: new Date(),
    });

    // Verified at rest, as an auditor meets a store that has run for a while: vacuumed and analysed, not
    // with autovacuum still working through the million rows just loaded (it took a varying share of
    // the two cores, and the verification figure with it).
    await db.pool.query('VACUUM ANALYZE');
    // CPU as well as time: on a shared machine the rate drops, the CPU an event costs does not (much).
    const cpuBefore = processCpuUs(process.pid);
    const busy = machineBusy();
    started = process.hrtime.bigint();
    const verified = await verifyStoredHistory(
      {
        store,
        pool: db.pool,
        connection: {
          databaseUrl: db.url,
          eventStore: { EVENTSTORE_FOLLOWER_READS: false, PROJECTION_IDLE_POLL_MS: 2000 },
        },
      },
      { threads: THREADS },
    );
    const milliseconds = Math.round(Number(process.hrtime.bigint() - started) / 1e6);
    const verifierUs = processCpuUs(process.pid) - cpuBefore;
    const machineBusyShare = busy.sinceStart().share;
    if (!verified.ok || verified.events !== TOTAL || verified.checkpoints !== signed.length) {
      throw new Error(`audit verify did not pass: ${JSON.stringify(verified.findings.slice(0, 3))}`);
    }
    report({
      figure: 'audit.verify',
      events: verified.events,
      checkpoints: verified.checkpoints,
      milliseconds,
      eventsPerSecond: Math.round(verified.events / (milliseconds / 1000)),
      threads: verified.threads,
      // This process's CPU (every thread) a verified event, and how busy the whole machine was.
      verifierCpuUsPerEvent: round(verifierUs / verified.events, 1),
      machineBusyShare,
      ...context,
    });
  } finally {
    await store.close();
    await db.drop();
  }
}

/** The i-th event: a command accepted, then sent, on one of the projects' devices. */
function controlEvent(i: number): BatchEntry {
  const command = i >> 1;
  const project = command % PROJECTS;
  const device = `dev_${project}_${(command >> 7) % DEVICES_PER_PROJECT}`;
  const ref = {
    commandId: `cmd_${command.toString(36).padStart(10, '0')}`,
    deviceId: device,
    projectId: `prj_bench${project}`,
  };
  const at = new Date(Date.UTC(2026, 10, 21, 10) + command * 10).toISOString();
  const data =
    i % 2 === 0
      ? {
          ...ref,
          capability: 'actuator.relay',
          value: command % 3 === 0,
          mode: 'imperative',
          ttlSeconds: 60,
          acceptedAt: at,
          expiresAt: at,
          by: { kind: 'client', clientId: `cli_bench${project}` },
          idempotencyKey: `key-${command}`,
          requestHash: `hash-${command}`,
        }
      : { ...ref, agentId: `agt_bench${project}`, attempt: 1, sentAt: at };
  return {
    streamName: `device-${device}`,
    event: { id: randomUUID(), type: i % 2 === 0 ? 'CommandAccepted' : 'CommandSent', data },
  };
}
