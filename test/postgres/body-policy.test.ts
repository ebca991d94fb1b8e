// The tests of ../http/body-policy.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../http/body-policy.test.js');
