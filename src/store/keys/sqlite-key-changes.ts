import type { Db } from '../sqlite/open-database.js';
import type { KeyChanges } from './key-cache.js';

/**
 * How the key cache (src/store/keys/key-cache.ts) learns of a change to the keys made by another
 * process (the CLI): PRAGMA data_version moves when another connection commits, and then the
 * keys_version counter, which triggers move with any change to api_keys (../sqlite/migrations.ts),
 * says whether keys were among what changed. A change made through this process's own connection
 * does not move data_version: the repository empties the cache itself. The check runs once per turn
 * of the event loop, not per request: a change committed before a turn begins is seen by every
 * request of that turn, and a request from the network after a change by another process always
 * arrives in a later turn.
 */
export function createKeyChanges(db: Db): KeyChanges & { changedHere(): void } {
  const dataVersion = db.prepare<[], number>('PRAGMA data_version').pluck();
  const keysVersion = db.prepare<[], number>("SELECT value FROM meta WHERE name = 'keys_version'").pluck();
  let clear = () => {};
  let seenDataVersion = dataVersion.get();
  let seenKeysVersion = keysVersion.get();
  let checkedThisTurn = false;
  const nextTurn = () => {
    checkedThisTurn = false;
  };

  return {
    watch(clearCache) {
      clear = clearCache;
    },
    /** A change to keys or clients committed through this connection: data_version does not show it. */
    changedHere() {
      seenKeysVersion = keysVersion.get();
      clear();
    },
    usable() {
      if (checkedThisTurn) return true;
      checkedThisTurn = true;
      setImmediate(nextTurn);
      let data: number;
      try {
        data = dataVersion.get()!;
      } catch {
        // The file cannot be read (closed, or failing): no change can be seen, and none can have
        // been made through it; the keys known answer, as they would on a read-only disk.
        return true;
      }
      if (data === seenDataVersion) return true;
      seenDataVersion = data;
      const keys = keysVersion.get();
      if (keys !== seenKeysVersion) {
        seenKeysVersion = keys;
        clear();
      }
      return true;
    },
  };
}
