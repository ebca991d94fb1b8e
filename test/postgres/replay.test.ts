// The tests of ../delivery/replay.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../delivery/replay.test.js');
