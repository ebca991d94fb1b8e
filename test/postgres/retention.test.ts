// The tests of ../retention/pruner.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../retention/pruner.test.js');
