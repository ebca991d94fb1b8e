// The tests of ../handlers/portal-links.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../handlers/portal-links.test.js');
