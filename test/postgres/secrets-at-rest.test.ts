// The tests of ../handlers/secrets-at-rest.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../handlers/secrets-at-rest.test.js');
