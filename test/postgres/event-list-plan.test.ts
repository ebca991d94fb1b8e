// The tests of ../store/event-list-plan.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../store/event-list-plan.test.js');
