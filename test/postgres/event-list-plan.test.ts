// The tests of ../store/events/event-list-plan.test.ts, on PostgreSQL.
import { usePostgres } from '../helpers/stores.js';

usePostgres();
await import('../store/events/event-list-plan.test.js');
