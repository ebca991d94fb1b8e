// The tests of ../delivery/delivery.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../delivery/delivery.test.js');
