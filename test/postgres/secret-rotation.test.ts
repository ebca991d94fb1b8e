// The tests of ../handlers/secret-rotation.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../handlers/secret-rotation.test.js');
