import { createHook } from 'node:async_hooks';
import { fstatSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { isatty } from 'node:tty';

/**
 * What keeps the process alive after the suite: a run that leaves a timer, socket, server or child behind
 * would otherwise never end (or, with mocha's `exit`, end silently). The types come from
 * process.getActiveResourcesInfo(); with TEST_HANDLE_STACKS=1 each one also says where it was created.
 */

/** The resource types of stdout and stderr, which the reporter keeps open and are nobody's leak. */
function stdioTypes(): string[] {
  return [1, 2].flatMap((fd) => {
    if (isatty(fd)) return ['TTYWrap'];
    try {
      const stat = fstatSync(fd);
      return stat.isFIFO() || stat.isSocket() ? ['PipeWrap'] : [];
    } catch {
      return [];
    }
  });
}

function openResources(): string[] {
  const open = process.getActiveResourcesInfo();
  for (const type of stdioTypes()) {
    const at = open.indexOf(type);
    if (at >= 0) open.splice(at, 1);
  }
  return open;
}

/** The resources still open once `graceMs` has passed (closing sockets and exiting children take a moment). */
export async function lingeringResources(graceMs: number): Promise<string[]> {
  const deadline = Date.now() + graceMs;
  checking = true;
  for (;;) {
    const open = openResources();
    if (open.length === 0 || Date.now() >= deadline) return open;
    await sleep(50);
  }
}

interface Created {
  readonly type: string;
  readonly stack: string;
  readonly resource: WeakRef<object>;
}
let created: Map<number, Created> | undefined;
/** Set once the check has begun: what it creates itself (its own waits) is not the suite's. */
let checking = false;

/** Remembers where every async resource was created, until it is destroyed (costly: opt-in). */
export function recordCreationStacks(): void {
  if (created) return;
  const live = new Map<number, Created>();
  created = live;
  Error.stackTraceLimit = Math.max(Error.stackTraceLimit, 30); // past node's own frames to ours
  createHook({
    init(id, type, _trigger, resource) {
      if (type === 'PROMISE' || checking) return;
      live.set(id, { type, stack: new Error().stack ?? '', resource: new WeakRef(resource) });
    },
    destroy(id) {
      live.delete(id);
    },
  }).enable();
}

/** async_hooks and getActiveResourcesInfo spell some types apart: TCPWRAP is TCPSocketWrap there. */
const sameType = (type: string) => type.toLowerCase().replace('socket', '');

/** Where the resources of the `open` types were created, when recordCreationStacks is on. */
export function creationStacks(open: readonly string[]): string[] {
  if (!created) return [];
  const types = new Set(open.map(sameType));
  const stacks: string[] = [];
  for (const { type, stack, resource } of created.values()) {
    if (!types.has(sameType(type))) continue;
    const held = resource.deref() as { hasRef?: () => boolean } | undefined;
    // Handles and timers say whether they hold the loop; a request holds it until it is destroyed.
    if (!held || (typeof held.hasRef === 'function' && !held.hasRef())) continue;
    const frames = stack.split('\n').slice(1);
    stacks.push([type, ...frames.filter((f) => !/node:internal|open-handles\.ts/.test(f))].join('\n'));
  }
  return stacks;
}
