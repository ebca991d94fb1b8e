// The tests of ../store/failing-since-upgrade.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../store/failing-since-upgrade.test.js');
