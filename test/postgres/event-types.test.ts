// The tests of ../handlers/event-types.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../handlers/event-types.test.js');
