// The tests of ../http/metrics.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../http/metrics.test.js');
