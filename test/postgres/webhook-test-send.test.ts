// The tests of ../handlers/webhook-test-send.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../handlers/webhook-test-send.test.js');
