// The tests of ../store/idempotent-writes.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../store/idempotent-writes.test.js');
