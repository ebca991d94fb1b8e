// The tests of ../cli/cli.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../cli/cli.test.js');
