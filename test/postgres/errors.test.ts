// The tests of ../http/errors.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../http/errors.test.js');
