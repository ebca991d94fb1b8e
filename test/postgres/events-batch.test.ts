// The tests of ../handlers/events-batch.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../handlers/events-batch.test.js');
