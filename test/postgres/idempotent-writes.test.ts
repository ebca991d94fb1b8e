// The tests of ../store/idempotency/idempotent-writes.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../store/idempotency/idempotent-writes.test.js');
