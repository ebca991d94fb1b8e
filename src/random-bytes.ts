import { randomBytes } from 'node:crypto';

// Secrets and ids take a few random bytes each, many times a second. One call to the CSPRNG per
// 4 KiB instead of one per id; every byte is handed out once.
const POOL_SIZE = 4096;
let pool = randomBytes(POOL_SIZE);
let offset = 0;

export function pooledRandomBytes(size: number): Buffer {
  if (offset + size > POOL_SIZE) {
    pool = randomBytes(POOL_SIZE);
    offset = 0;
  }
  const bytes = Buffer.from(pool.subarray(offset, offset + size));
  offset += size;
  return bytes;
}
