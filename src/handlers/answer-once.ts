import type { KeyedBy, KeyTaken, MaybeKey } from '../store/store.js';
import type { Answer, RequestIdempotency } from './types.js';

/**
 * A write an operation makes under the request's Idempotency-Key, when it carries one, and the
 * answer to it, built once. Without a key, `render` of the write's result. With one, the write is
 * given the key and `render` (the store keeps what it answers in the write's transaction), and
 * the request gets that same answer, or the store's word that the key took the write (the kept
 * answer, a mismatch), which src/http/idempotency.ts answers. `made` runs when the write was
 * made by this request, after its commit.
 */
export async function answerOnce<T, A extends Answer>(
  idempotency: RequestIdempotency | undefined,
  render: (result: T) => A,
  write: <K extends MaybeKey<T>>(key?: K) => Promise<KeyedBy<K, T>>,
  made?: (result: T) => void,
): Promise<A | KeyTaken> {
  if (!idempotency) {
    const result = await write<undefined>();
    made?.(result);
    return render(result);
  }
  const key = idempotency.keep(render);
  const keyed = await write(key);
  if (keyed.kind !== 'done') return keyed;
  made?.(keyed.value);
  return key.answer();
}
