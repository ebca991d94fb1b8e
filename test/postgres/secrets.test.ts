// The tests of ../http/secrets.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../http/secrets.test.js');
