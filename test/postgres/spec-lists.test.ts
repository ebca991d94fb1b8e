// The tests of ../e2e/spec-lists.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../e2e/spec-lists.test.js');
