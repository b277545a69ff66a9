import { setTimeout as sleep } from 'node:timers/promises';

/**
 * What `npm run bench` has started and must undo even when it is stopped early. Ctrl-C or `kill` used to
 * end the run at once and leave its embedded PostgreSQL, a service process, a database on DATABASE_URL's
 * server or a temporary directory behind. Now each bench registers an undo for as long as the thing it made
 * exists, and a run stopped by SIGINT or SIGTERM performs every undo still registered, newest first, before
 * it exits as the signal asks. A second signal while that runs ends the process at once. SIGKILL cannot be
 * caught: what it leaves is named in docs/performance.md.
 */
const registered = new Set<() => Promise<void>>();

/** An undo slow past this is left and the next one runs: a stuck stop must not keep the run alive. */
const UNDO_TIMEOUT_MS = 35_000;

/**
 * Registers `undo` and returns it, to be called where the bench cleans up anyway: it runs once, however
 * often it is called, and is forgotten once run.
 */
export function undoable(undo: () => Promise<unknown>): () => Promise<void> {
  let done: Promise<void> | undefined;
  const once = () => {
    registered.delete(once);
    done ??= undo().then(() => undefined);
    return done;
  };
  registered.add(once);
  return once;
}

let stopping: Promise<void> | undefined;

/** From now on SIGINT and SIGTERM undo what is registered, then `last`, then exit 128 + the signal's number. */
export function undoOnSignals(last: () => Promise<void>): void {
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    process.once(signal, () => {
      process.stderr.write(`bench: ${signal}: stopping what this run started\n`);
      // The run's own work now fails as what it uses goes away (after Ctrl-C, PostgreSQL has the signal
      // too): expected, and it must not end the process before the undo is done.
      process.on('uncaughtException', reportWhileStopping);
      process.on('unhandledRejection', reportWhileStopping);
      stopping ??= (async () => {
        for (const undo of [...registered, last].reverse()) {
          await Promise.race([undo().catch(reportWhileStopping), sleep(UNDO_TIMEOUT_MS)]);
        }
        process.exit(code);
      })();
    });
  }
}

/** Returns at once, unless a signal is being handled: then never, as its undo ends the process. */
export async function untilStopped(): Promise<void> {
  if (stopping) await stopping;
}

function reportWhileStopping(error: unknown): void {
  process.stderr.write(`bench: while stopping: ${error instanceof Error ? error.message : String(error)}\n`);
}
