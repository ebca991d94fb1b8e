// The tests of ../handlers/idempotency.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../handlers/idempotency.test.js');
