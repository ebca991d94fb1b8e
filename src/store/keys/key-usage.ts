import type { KeyRepository } from '../store.js';

// When each key was last used (the admin API's lastUsedAt), the same over both stores: a request's
// key is noted in memory, and the keys noted are written together once a minute, to the minute.
// A write per request would double the cost of the cheapest ones; a use lost in a crash is at
// most a minute of it.

const FLUSH_INTERVAL_MS = 60_000;

/** `keys` with each key found noted as used; `close` writes what is noted and stops. */
export function withKeyUsage(keys: KeyRepository): { keys: KeyRepository; close(): Promise<void> } {
  let used = new Set<string>();
  const flush = async () => {
    if (used.size === 0) return;
    const hashes = [...used];
    used = new Set();
    const minute = new Date(Math.floor(Date.now() / 60_000) * 60_000).toISOString();
    await keys.recordUse(hashes, minute).catch(() => {
      // The database is out of reach: the uses are noted again as requests come.
    });
  };
  const timer = setInterval(() => void flush(), FLUSH_INTERVAL_MS);
  timer.unref();
  return {
    keys: {
      ...keys,
      async findKey(hash) {
        const found = await keys.findKey(hash);
        if (found) used.add(hash);
        return found;
      },
    },
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}
