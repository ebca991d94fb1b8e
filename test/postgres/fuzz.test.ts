// The tests of ../e2e/fuzz.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../e2e/fuzz.test.js');
