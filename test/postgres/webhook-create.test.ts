// The tests of ../handlers/webhook-create.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../handlers/webhook-create.test.js');
