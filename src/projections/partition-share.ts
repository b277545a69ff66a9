import type { Logger } from '../infra/logger.js';
import type { Pool, PoolClient } from '../infra/postgres/pool.js';
import type { Partition } from './projector.js';

/**
 * Every process running projectors holds this advisory lock in shared mode for as long as it lives, so the
 * number of holders is the number of projector processes. A process that dies loses its session, and with
 * it its membership, at the moment PostgreSQL notices (at once for a killed process on a live host; after
 * the keepalive probes of src/infra/postgres/election.ts for a vanished host).
 */
const MEMBERSHIP: readonly [number, number] = [0x44435052, 1];
const JOIN = 'SELECT pg_advisory_lock_shared($1::int4, $2::int4)';
const MEMBERS = `
  SELECT count(*)::int AS members FROM pg_locks
   WHERE locktype = 'advisory' AND mode = 'ShareLock' AND granted
     AND classid = $1::int8::oid AND objid = $2::int8::oid AND objsubid = 2
     AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`;

/** A partition this process leads, until it is asked to hand it over (`signal`) or lets it go. */
export interface Seat {
  readonly signal: AbortSignal;
  release(): void;
}

/**
 * Keeps this process to its fair share of each partitioned projector: at most ceil(partitions / processes)
 * partitions of a family. A process under its share may stand for election to one more partition; one
 * over it (another process joined) hands partitions back, which the others take on their next try. Which
 * process leads a partition is still decided by that partition's own election; the share only decides who
 * stands.
 */
export class PartitionShare {
  /** Per family: its partition count and the partitions this process leads, each with its hand-over. */
  readonly #families = new Map<string, { count: number; seats: Map<number, AbortController> }>();
  #members = 1;
  #connection: PoolClient | undefined;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  private constructor(
    private readonly locks: Pool,
    private readonly logger: Logger,
    private readonly recountMs: number,
  ) {}

  static async join(locks: Pool, logger: Logger, recountMs = 1000): Promise<PartitionShare> {
    const share = new PartitionShare(locks, logger, recountMs);
    await share.recount();
    share.#schedule();
    return share;
  }

  /** Projector processes alive on this database, this one included, at the last count. */
  get members(): number {
    return this.#members;
  }

  /** The partitions of `family` this process leads now, in order (health and tests). */
  leading(family: string): number[] {
    return [...(this.#families.get(family)?.seats.keys() ?? [])].sort((a, b) => a - b);
  }

  /** How many partitions of a family of `count` this process may lead. */
  fairShare(count: number): number {
    return Math.ceil(count / Math.max(1, this.#members));
  }

  mayLead(partition: Partition): boolean {
    return this.#family(partition).seats.size < this.fairShare(partition.count);
  }

  /** Records that this process now leads `partition`; the seat's signal asks for it back. */
  seat(partition: Partition): Seat {
    const { seats } = this.#family(partition);
    const handOver = new AbortController();
    seats.set(partition.index, handOver);
    this.#rebalance();
    return {
      signal: handOver.signal,
      release: () => {
        if (seats.get(partition.index) === handOver) seats.delete(partition.index);
      },
    };
  }

  #family(partition: Partition) {
    let family = this.#families.get(partition.family);
    if (!family)
      this.#families.set(partition.family, (family = { count: partition.count, seats: new Map() }));
    return family;
  }

  /** Counts the members again (joining first if this process's membership was lost) and rebalances. */
  async recount(): Promise<void> {
    try {
      if (!this.#connection) {
        const connection = await this.locks.connect();
        this.#connection = connection;
        connection.on('error', () => this.#drop(connection));
        await connection.query(JOIN, [...MEMBERSHIP]);
      }
      const { rows } = await this.#connection.query<{ members: number }>(MEMBERS, [...MEMBERSHIP]);
      const members = Math.max(1, rows[0]!.members);
      if (members !== this.#members)
        this.logger.info(
          { members, was: this.#members },
          'projector processes changed: rebalancing partitions',
        );
      this.#members = members;
    } catch (error) {
      if (this.#connection) this.#drop(this.#connection);
      // Without a count the last one stands: partitions stay where they are until the database answers.
      this.logger.warn({ err: error }, 'projector processes not counted');
    }
    this.#rebalance();
  }

  async leave(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    if (this.#connection) this.#drop(this.#connection);
  }

  // Hands back the highest-numbered partitions beyond the share, so two processes converge on a split.
  #rebalance(): void {
    for (const [family, { count, seats }] of this.#families) {
      const excess = seats.size - this.fairShare(count);
      if (excess <= 0) continue;
      for (const index of [...seats.keys()].sort((a, b) => b - a).slice(0, excess)) {
        this.logger.info({ family, partition: index }, 'handing a partition over to another process');
        seats.get(index)!.abort();
        seats.delete(index);
      }
    }
  }

  #drop(connection: PoolClient): void {
    if (this.#connection !== connection) return;
    this.#connection = undefined;
    connection.release(true);
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      void this.recount().finally(() => this.#schedule());
    }, this.recountMs);
    this.#timer.unref();
  }
}
