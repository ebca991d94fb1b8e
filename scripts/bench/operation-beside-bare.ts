// What scripts/bench/profile-operation.ts and scripts/bench/count-instructions.ts set side by
// side: one leadhooks operation, served from a copy of the small case's database, and bare
// Fastify answering the same requests (the operation's baseline in the bench).
import { sqliteDatabase, type BenchDatabase } from './bench-database.js';
import type { BenchOptions } from './bench-options.js';
import type { PreparedRequest } from './load-generator.js';
import { createWebhookRequests, getRequests } from './prepared-requests.js';
import { cachedDatabase, copyDatabase } from './seeded-database-cache.js';
import { apiGroups, seedApiDatabase } from './seed-database.js';

export type ComparedOperation = 'about' | 'create';

export function isComparedOperation(value: string | undefined): value is ComparedOperation {
  return value === 'about' || value === 'create';
}

export interface OperationBesideBare {
  label: string;
  leadhooksRequests: PreparedRequest[];
  bareRequests: PreparedRequest[];
  /** leadhooks's database: `name`.db in `dir`. */
  database: BenchDatabase;
}

export function operationBesideBare(operation: ComparedOperation, options: BenchOptions, dir: string, name: string): OperationBesideBare {
  const group = apiGroups(options.api.layout).small;
  const database = sqliteDatabase(copyDatabase(cachedDatabase(options.api.name, options.api.layout, seedApiDatabase), dir, name));
  return operation === 'about'
    ? { label: 'GET /about', leadhooksRequests: getRequests(group, '/about'), bareRequests: getRequests(group, '/'), database }
    : { label: 'POST /webhook', leadhooksRequests: createWebhookRequests(group), bareRequests: createWebhookRequests(group, '/echo'), database };
}
