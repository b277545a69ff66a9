import { setTimeout as sleep } from 'node:timers/promises';

/**
 * What `npm run bench` has started and must undo even when it is stopped early: left to the default,
 * Ctrl-C or `kill` ends the run at once and leaves its embedded PostgreSQL (which pg_ctl detaches, so it
 * does not even share the run's process group), a service process, a database on DATABASE_URL's server or a
 * temporary directory behind. Each bench registers an undo for as long as the thing it made exists, and a
 * run stopped by SIGINT or SIGTERM performs every undo still registered, newest first, before it exits as
 * the signal asks. A second signal while that runs, of either kind, ends the process at once. SIGKILL cannot
 * be caught: what it leaves is named in docs/performance.md.
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
  const handlers = new Map<NodeJS.Signals, () => void>();
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    handlers.set(signal, () => {
      // Any further signal takes its default action: the way out of an undo that hangs.
      for (const [other, handler] of handlers) process.removeListener(other, handler);
      process.stderr.write(`bench: ${signal}: stopping what this run started\n`);
      // The run's own work now fails as what it uses goes away (its service stopped, its database dropped,
      // its cluster shut down): expected, and it must not end the process before the undo is done.
      process.on('uncaughtException', reportWhileStopping);
      process.on('unhandledRejection', reportWhileStopping);
      stopping = (async () => {
        for (const undo of [...registered, last].reverse()) {
          await Promise.race([undo().catch(reportWhileStopping), sleep(UNDO_TIMEOUT_MS)]);
        }
        process.exit(code);
      })();
    });
  }
  for (const [signal, handler] of handlers) process.on(signal, handler);
}

/** Returns at once, unless a signal is being handled: then never, as its undo ends the process. */
export async function untilStopped(): Promise<void> {
  if (stopping) await stopping;
}

function reportWhileStopping(error: unknown): void {
  process.stderr.write(`bench: while stopping: ${error instanceof Error ? error.message : String(error)}\n`);
}
