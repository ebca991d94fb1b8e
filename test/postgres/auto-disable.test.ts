// The tests of ../delivery/auto-disable.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../delivery/auto-disable.test.js');
