// The tests of ../handlers/webhook-update.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../handlers/webhook-update.test.js');
