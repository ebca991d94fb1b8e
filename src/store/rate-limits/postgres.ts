import type pg from 'pg';
import type { RateLimitRepository } from '../store.js';

// The per-key rate limit's count of each window, shared by the API processes on one database
// (src/http/rate-limit-shared.ts). A process asks for shares of keys' windows only when those it
// holds run low, all it needs at once in one statement, so these statements come once per share
// at most, not once per request.

export function createRateLimitRepository(pool: pg.Pool): RateLimitRepository {
  return {
    async lease(wanted, limit) {
      if (wanted.length === 0) return [];
      // Rows are locked in the order of their keys, whoever asks, so that two processes asking for
      // the same keys at once wait for each other rather than deadlock. Each share is granted what
      // its window has left, at most what was asked for (EXCLUDED.taken, as the new row would have
      // it); last_grant tells the caller what this statement granted (RETURNING sees only the new row).
      const order = wanted.map((_, i) => i).sort((a, b) => compare(wanted[a]!.keyHash, wanted[b]!.keyHash) || wanted[a]!.windowStart - wanted[b]!.windowStart);
      const { rows } = await pool.query<{ n: string; granted: number; taken: number }>({
        name: 'rate-limit-lease',
        text: `INSERT INTO rate_limit_windows AS w (key_hash, window_start, taken, last_grant)
               SELECT r.key_hash, to_timestamp(r.window_start / 1000.0), least(r.want, $4::integer), least(r.want, $4::integer)
               FROM unnest($1::text[], $2::bigint[], $3::integer[]) WITH ORDINALITY AS r(key_hash, window_start, want, n)
               ORDER BY r.n
               ON CONFLICT (key_hash, window_start) DO UPDATE
                 SET taken = w.taken + least(EXCLUDED.taken, greatest(0, $4::integer - w.taken)),
                     last_grant = least(EXCLUDED.taken, greatest(0, $4::integer - w.taken))
               RETURNING w.key_hash || ' ' || (extract(epoch FROM w.window_start) * 1000)::bigint AS n, last_grant AS granted, taken`,
        values: [order.map((i) => wanted[i]!.keyHash), order.map((i) => wanted[i]!.windowStart), order.map((i) => wanted[i]!.want), limit],
      });
      const answers = new Map(rows.map(({ n, granted, taken }) => [n, { granted, taken }]));
      return wanted.map(({ keyHash, windowStart }) => answers.get(`${keyHash} ${windowStart}`)!);
    },
    async giveBack(shares) {
      if (shares.length === 0) return;
      // Locked in key order first, as a lease locks them: two processes never wait in a circle.
      await pool.query(
        `WITH r AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::integer[]) AS u(key_hash, window_start, count)),
         locked AS (
           SELECT w.key_hash, w.window_start, r.count FROM rate_limit_windows w
           JOIN r ON w.key_hash = r.key_hash AND w.window_start = to_timestamp(r.window_start / 1000.0)
           ORDER BY w.key_hash COLLATE "C", w.window_start FOR UPDATE OF w
         )
         UPDATE rate_limit_windows AS w SET taken = greatest(0, w.taken - l.count)
         FROM locked l WHERE w.key_hash = l.key_hash AND w.window_start = l.window_start`,
        [shares.map((s) => s.keyHash), shares.map((s) => s.windowStart), shares.map((s) => s.count)],
      );
    },
    async prune(before) {
      // Through rate_limit_windows_by_start: a row per key and window, only the ended ones.
      const { rowCount } = await pool.query('DELETE FROM rate_limit_windows WHERE window_start < to_timestamp($1::bigint / 1000.0)', [before]);
      return rowCount ?? 0;
    },
  };
}

/** Text compared by code points, as the keys' hex digests sort alike in any collation. */
const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

