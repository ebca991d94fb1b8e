import type pg from 'pg';
import type { createListener, ListeningSession } from '../postgres/listener.js';
import type { KeyChanges } from './key-cache.js';

/**
 * What the api_keys_changed trigger notifies, with the new keys_version, at commit
 * (../postgres/migrations.ts).
 */
const KEYS_CHANNEL = 'leadhooks_keys';
/** Where a process caching keys confirms that it has dropped them, up to a keys_version. */
const SEEN_CHANNEL = 'leadhooks_keys_seen';
/** The listening session of a process caching keys, by which a revocation finds them all. */
const CACHING_SESSION = 'leadhooks listener (key cache)';
/** How often a process caching keys reads keys_version on its listening session. */
const CHECK_INTERVAL_MS = 1_000;
/** How long after such a read began the cache may answer without another. */
const KEY_LEASE_MS = 2_000;

export const KEYS_VERSION = "SELECT value FROM meta WHERE name = 'keys_version'";

/**
 * The key cache's side of PostgreSQL (key-cache.ts), where any replica or the CLI may revoke a
 * key, and every replica's cache must refuse it from the moment the revocation returns.
 *
 * - Each process caching keys LISTENs on leadhooks_keys, which a trigger notifies inside the
 *   revoking transaction (delivered at commit). On a notice it empties its cache, then confirms
 *   on leadhooks_keys_seen, from its listening session.
 * - A revocation (`settle`) waits, once committed, until every listening session named
 *   CACHING_SESSION in pg_stat_activity has confirmed, and at most KEY_LEASE_MS. So a request
 *   sent to any replica after the revocation returned finds an empty cache, and its lookup reads
 *   the database after the commit.
 * - The cache answers only under a lease: KEY_LEASE_MS from the start of the last read of
 *   keys_version on the listening session that succeeded (one a second). A process that cannot
 *   confirm in time (its connection silently gone, its event loop stalled) has then no lease from
 *   before the commit left when the revocation returns, and asks the database; a process whose
 *   session vanished before the revocation listed the sessions stops answering from memory within
 *   KEY_LEASE_MS, the bound on a missed notice. The cache is emptied whenever the connection is
 *   lost and again when it listens anew.
 */
export function createKeyChanges(pool: pg.Pool, listener: ReturnType<typeof createListener>, connectTimeoutMs: number) {
  let clear = () => {};
  let session: ListeningSession | undefined;
  let started = false;
  let reading: { on: ListeningSession; done: Promise<void> } | undefined;
  let leaseUntil = 0;
  /** The highest keys_version whose changes the cache has dropped. */
  let seen = -1;
  let timer: NodeJS.Timeout | undefined;

  function saw(version: number) {
    if (version <= seen) return;
    seen = version;
    clear();
  }

  const confirm = (current: ListeningSession) => current.query(`SELECT pg_notify('${SEEN_CHANNEL}', $1)`, [String(seen)]).catch(() => {});

  /** Reads keys_version on the session, renewing the lease; joins a read already under way on it. */
  function check(current: ListeningSession): Promise<void> {
    if (reading?.on === current) return reading.done;
    const read = { on: current, done: readVersion(current) };
    reading = read;
    void read.done.finally(() => {
      if (reading === read) reading = undefined;
    });
    return read.done;
  }

  async function readVersion(current: ListeningSession): Promise<void> {
    const sentAt = performance.now();
    try {
      const { rows } = await current.query<{ value: number }>(KEYS_VERSION);
      if (session !== current) return;
      saw(Number(rows[0]!.value));
      leaseUntil = sentAt + KEY_LEASE_MS;
    } catch {
      // The listener finds its connection lost, and says so (`lost`).
    }
  }

  function start() {
    started = true;
    listener.subscribe(KEYS_CHANNEL, {
      async listening(current) {
        session = current;
        clear();
        try {
          // Named only once it listens: a revocation waits for the sessions it finds so named.
          await current.query(`SET application_name = '${CACHING_SESSION}'`);
        } catch {
          return;
        }
        await check(current);
        // What a revocation committed before this session listened was read by `check`.
        if (session === current) await confirm(current);
      },
      notice(payload) {
        saw(Number(payload));
        if (session) void confirm(session);
      },
      lost() {
        session = undefined;
        leaseUntil = 0;
        clear();
      },
    });
    timer = setInterval(() => session && void check(session), CHECK_INTERVAL_MS);
    timer.unref();
  }

  // The revoking side: confirmations heard, by the server process id of the session that sent them.
  const confirmed = new Map<number, number>();
  const waiting = new Set<() => void>();
  let hearing: Promise<void> | undefined;

  /** Listens for confirmations (waiting for the connection no longer than its timeout): before a revocation, so that none is missed. */
  function hear(): Promise<void> {
    hearing ??= new Promise<void>((resolve) => {
      setTimeout(resolve, connectTimeoutMs).unref();
      listener.subscribe(SEEN_CHANNEL, {
        listening: () => resolve(),
        notice(payload, pid) {
          confirmed.set(pid, Math.max(confirmed.get(pid) ?? -1, Number(payload)));
          for (const wake of waiting) wake();
        },
      });
    });
    return hearing;
  }

  /** After a change that moved keys_version to `version` has committed: until every process caching keys has dropped them. */
  async function settle(version: number): Promise<void> {
    const deadline = performance.now() + KEY_LEASE_MS;
    let pids: number[];
    try {
      const { rows } = await pool.query<{ pid: number }>(
        'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1',
        [CACHING_SESSION],
      );
      pids = rows.map((row) => row.pid);
    } catch {
      pids = [-1]; // none can confirm: the leases run out
    }
    for (const pid of confirmed.keys()) if (!pids.includes(pid)) confirmed.delete(pid);
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timeout);
        waiting.delete(wake);
        resolve();
      };
      const wake = () => {
        if (pids.every((pid) => (confirmed.get(pid) ?? -1) >= version)) done();
      };
      const timeout = setTimeout(done, Math.max(0, deadline - performance.now()));
      waiting.add(wake);
      wake();
    });
  }

  const changes: KeyChanges = {
    watch(clearCache) {
      clear = clearCache;
    },
    usable() {
      if (!started) start();
      return performance.now() < leaseUntil;
    },
  };
  return {
    ...changes,
    hear,
    settle,
    close() {
      clearInterval(timer);
    },
  };
}

export type PostgresKeyChanges = ReturnType<typeof createKeyChanges>;
