// The tests of ../e2e/e2e.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../e2e/e2e.test.js');
