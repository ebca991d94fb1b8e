import type pg from 'pg';
import type { RateLimitRepository } from '../store.js';

// The per-key rate limit's count of each window, shared by the API processes on one database
// (src/http/rate-limit-shared.ts). A process asks for a share of a key's window only when the one
// it holds runs low, so these statements come once per share, not once per request.

export function createRateLimitRepository(pool: pg.Pool): RateLimitRepository {
  return {
    async lease(keyHash, windowStart, want, limit) {
      // One statement, whoever comes first in the window: the row's lock orders the processes, and
      // each is granted what the window has left, at most what it asked for. last_grant tells the
      // caller what its own update granted (RETURNING sees only the new row).
      const { rows } = await pool.query<{ granted: number; taken: number }>({
        name: 'rate-limit-lease',
        text: `INSERT INTO rate_limit_windows AS w (key_hash, window_start, taken, last_grant)
               VALUES ($1, to_timestamp($2::bigint / 1000.0), least($3::integer, $4::integer), least($3::integer, $4::integer))
               ON CONFLICT (key_hash, window_start) DO UPDATE
                 SET taken = w.taken + least($3::integer, greatest(0, $4::integer - w.taken)),
                     last_grant = least($3::integer, greatest(0, $4::integer - w.taken))
               RETURNING last_grant AS granted, taken`,
        values: [keyHash, windowStart, want, limit],
      });
      return rows[0]!;
    },
    async giveBack(shares) {
      if (shares.length === 0) return;
      await pool.query(
        `UPDATE rate_limit_windows AS w SET taken = greatest(0, w.taken - r.count)
         FROM unnest($1::text[], $2::bigint[], $3::integer[]) AS r(key_hash, window_start, count)
         WHERE w.key_hash = r.key_hash AND w.window_start = to_timestamp(r.window_start / 1000.0)`,
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
