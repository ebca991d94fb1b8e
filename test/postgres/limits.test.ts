// The tests of ../http/limits.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../http/limits.test.js');
