// The tests of ../handlers/event-list.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../handlers/event-list.test.js');
