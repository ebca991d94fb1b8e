// The tests of ../handlers/webhook-pause.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../handlers/webhook-pause.test.js');
