// The tests of ../store/store-contract.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../store/store-contract.test.js');
