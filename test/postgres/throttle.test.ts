// The tests of ../delivery/throttle.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../delivery/throttle.test.js');
