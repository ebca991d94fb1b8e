// The tests of ../e2e/crash.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../e2e/crash.test.js');
