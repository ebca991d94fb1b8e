// The tests of ../handlers/webhook-list.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../handlers/webhook-list.test.js');
