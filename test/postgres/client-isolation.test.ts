// The tests of ../handlers/client-isolation.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../handlers/client-isolation.test.js');
