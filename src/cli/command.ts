import type { Config } from '../config.js';
import type { SecretBox } from '../secrets/webhook-secrets.js';
import type { AuditContext, Store } from '../store/store.js';

/** What a command prints: `json` with --json, `text` otherwise. */
export type Output = { json: unknown; text: string };

/** What a command gets besides its positional arguments: its options, and what the process built once. */
export interface CommandContext {
  data?: string;
  ttl?: string;
  /** portal-link create: the portal's look for this link (openapi.yaml, PortalBrandingSet). */
  productName?: string;
  logoUrl?: string;
  accentColor?: string;
  idempotencyKey?: string;
  /** event emit --lead-id: the lead's id in the lead system, as POST /events takes `leadId`. */
  leadId?: string;
  /** event emit --file: the JSON-lines file of events to publish. */
  file?: string;
  /** Where a long command says how far it got (stderr). */
  progress?: (line: string) => void;
  config: Config;
  secrets: SecretBox;
}

export type Command = (store: Store, args: string[], context: CommandContext) => Promise<Output>;

/** Whose Idempotency-Keys the CLI's publications use: its own, never meeting the publisher's keys of POST /events. */
export const CLI_IDEMPOTENCY_SCOPE = 'cli';

/**
 * Who the audit log says made the CLI's changes: the command-line tool, run on a machine with the
 * server's configuration; no request, so no address.
 */
export const CLI_AUDIT: AuditContext = { actor: { kind: 'cli' }, ip: null };

/** Bad arguments: exit 2. */
export class UsageError extends Error {}

/** Refused (no such client or key, an inactive client, a key used for another request...): exit 1. */
export class RefusedError extends Error {}

/** A publication whose outcome is unknown (the database stopped answering): exit 1, with the key that retries it safely. */
export class PublishFailedError extends Error {}

/** A command's id argument: a positive integer written in decimal digits, or a usage error. */
export function positiveInt(value: string | undefined, what: string): number {
  if (!value || !/^[1-9]\d*$/.test(value)) throw new UsageError(`${what} must be a positive integer`);
  return Number(value);
}
