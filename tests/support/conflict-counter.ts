import { WrongExpectedRevisionError, type EventStore } from '../../src/eventstore/port.js';

/**
 * The store as another process would hold it (decisions queue per store instance), counting the append
 * conflicts it meets: race tests prove with it that their writers really overlapped.
 */
export function countingConflicts(store: EventStore): { store: EventStore; conflicts: () => number } {
  let conflicts = 0;
  const appendMany: EventStore['appendMany'] = async (appends) => {
    try {
      return await store.appendMany(appends);
    } catch (error) {
      if (error instanceof WrongExpectedRevisionError) conflicts++;
      throw error;
    }
  };
  const wrapped = new Proxy(store, {
    get(target, property) {
      if (property === 'appendMany') return appendMany;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store: wrapped, conflicts: () => conflicts };
}
