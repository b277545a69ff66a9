import type { RecordedEvent } from '../eventstore/port.js';
import type { PoolClient } from '../infra/postgres/pool.js';

/**
 * A projector turns events of the global order into read-model rows. It owns its tables: `schemaSql`
 * creates them with unqualified names, so a rebuild can create fresh copies in a shadow schema and swap
 * them in. `apply` runs inside the transaction that also moves the checkpoint.
 */
export interface Projector {
  readonly name: string;
  /** Bump when the tables or the way events map onto them change: start-up then rebuilds the read model. */
  readonly version: number;
  readonly eventTypes: readonly string[];
  readonly tables: readonly string[];
  readonly schemaSql: string;
  apply(events: readonly RecordedEvent[], db: PoolClient): Promise<void>;
}
