// The tests of ../delivery/delivery-restart.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../delivery/delivery-restart.test.js');
