// The tests of ../e2e/traces.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../e2e/traces.test.js');
