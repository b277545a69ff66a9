/**
 * A small seeded generator (mulberry32): the simulated fleet and its values come out the same for the
 * same seed, on every machine.
 */
export type Random = () => number;

export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An independent stream for one part of the simulation (a device, a capability), derived from the seed. */
export function derivedRandom(seed: number, ...path: (string | number)[]): Random {
  let hash = 2166136261 ^ seed;
  for (const part of path.join('/')) {
    hash = Math.imul(hash ^ part.charCodeAt(0), 16777619);
  }
  return seededRandom(hash);
}

export function pick<T>(random: Random, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)]!;
}
