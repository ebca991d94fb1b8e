// The tests of ../handlers/webhook-delete.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../handlers/webhook-delete.test.js');
