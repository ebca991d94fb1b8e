// The API key cache, the same over both stores: key hash → client, so that an authenticated
// request costs no query. What differs is how a store learns that keys changed elsewhere (another
// process revoked one): each store gives a KeyChanges (sqlite-key-changes.ts and
// postgres-key-changes.ts, beside this file). A revocation through the repository this returns
// empties the cache at once; a client change that should end its keys (deactivation) would move
// the same signal.
import type { FoundKey, KeyRepository } from '../store.js';

const KEY_CACHE_SIZE = 10_000;

/** How a store tells its key cache that keys may have changed elsewhere. */
export interface KeyChanges {
  /** Starts watching; `clear` empties the cache, and is called whenever keys may have changed. */
  watch(clear: () => void): void;
  /**
   * Asked before each answer from the cache: whether it may answer now (else the store is asked).
   * It may call `clear` first.
   */
  usable(): boolean;
}

/** `keys` with its findKey answered from memory while `changes` allows, and emptied by a revocation. */
export function withKeyCache(keys: KeyRepository, changes: KeyChanges): KeyRepository {
  const entries = new Map<string, FoundKey>();
  // Moves with each clear: a lookup that began before a clear may have read a key since revoked,
  // and is not kept.
  let generation = 0;
  const clear = () => {
    entries.clear();
    generation++;
  };
  changes.watch(clear);

  return {
    create: (clientId, key, audit) => keys.create(clientId, key, audit),
    recordUse: (hashes, at) => keys.recordUse(hashes, at),
    list: (clientId) => keys.list(clientId),
    async revoke(idOrPrefix, audit) {
      const revoked = await keys.revoke(idOrPrefix, audit);
      if (revoked) clear();
      return revoked;
    },
    async findKey(hash) {
      if (changes.usable()) {
        const cached = entries.get(hash);
        if (cached) return cached;
      }
      const since = generation;
      const found = await keys.findKey(hash);
      // Unknown keys are not kept: the table would fill with them.
      if (found && since === generation) {
        if (entries.size >= KEY_CACHE_SIZE) entries.delete(entries.keys().next().value!);
        entries.set(hash, found);
      }
      return found;
    },
  };
}
