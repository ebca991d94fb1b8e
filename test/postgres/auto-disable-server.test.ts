// The tests of ../e2e/auto-disable-server.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../e2e/auto-disable-server.test.js');
