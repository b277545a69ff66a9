import { createPool, type Pool } from '../../infra/postgres/pool.js';

/**
 * The application_name of connections that write read models and never append events. Readers of the event
 * store do not wait for their transactions (functions/read_horizon.sql), and the store refuses events from
 * them, so a projector's long batch never delays what other subscribers see.
 */
export const READ_MODEL_WRITERS = 'device-cloud-read-models';

/** Connections for projector batches, checkpoints and rebuilds: one per projector, and room for a rebuild. */
export function createReadModelPool(connectionString: string, max = 14): Pool {
  return createPool(connectionString, { max, applicationName: READ_MODEL_WRITERS });
}
