import { loadConfig, type Config } from '../config.js';
import { openEventStore } from '../eventstore/open.js';
import type { EventStore } from '../eventstore/port.js';
import { createLogger, type Logger } from '../infra/logger.js';
import { openDatabase, type Database } from '../runtime/database.js';

export interface CliContext {
  readonly config: Config;
  readonly logger: Logger;
  readonly database: Database;
  readonly store: EventStore;
}

/**
 * Opens what an operator command needs. The CLI reaches the same database as the server: DATABASE_URL, or
 * the embedded cluster under DATA_DIR, joined if the server runs it and started (then stopped) otherwise.
 */
export async function withCliContext<T>(work: (context: CliContext) => Promise<T>): Promise<T> {
  const config = loadConfig();
  // Logs go to stderr so stdout carries only the command's answer.
  const logger = createLogger(process.env.LOG_LEVEL ? config.LOG_LEVEL : 'warn', process.stderr);
  const database = await openDatabase(config, logger, { poolSize: 4 });
  try {
    const store = await openEventStore(config, database, logger);
    try {
      return await work({ config, logger, database, store });
    } finally {
      await store.close();
    }
  } finally {
    await database.close();
  }
}
