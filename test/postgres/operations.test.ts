// The tests of ../routes/operations.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../routes/operations.test.js');
