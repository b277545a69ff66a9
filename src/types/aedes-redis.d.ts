// aedes-persistence-redis ships no types; mqemitter-redis's omit the prefixing emitter. Only what we call.
declare module 'aedes-persistence-redis' {
  import type { Redis } from 'ioredis';

  interface RedisPersistence {
    /** Leaves the cluster's subscription broadcast and disconnects `conn`; once only. */
    destroy(): Promise<void>;
  }
  function redisPersistence(options: { conn: Redis }): RedisPersistence;
  export default redisPersistence;
}
