// Versioned schema migrations. The database's `user_version` is the number of migrations
// applied; each runs in its own transaction at start (migrate.ts). Append only: never
// edit a shipped one. The first sixteen are in migrations-01-16.ts; when this file grows long,
// the next shipped run of them moves to a file of its own the same way.

import { WAITING_AT } from '../../delivery-policy/lead-order.js';
import { MIGRATIONS_01_16 } from './migrations-01-16.js';

export const MIGRATIONS: readonly string[] = [
  ...MIGRATIONS_01_16,
  // Detached webhooks (README, "Retention"). Detaching erases a webhook's signing secrets, and
  // those of the webhooks detached before this are erased here. Retention deletes a detached
  // webhook's row once nothing refers to it: webhooks_detached walks them in the order they were
  // detached, and the other two indexes let the check that no delivery or operational event
  // refers to one (and the foreign-key checks of its deletion) read an index, not a table.
  `
  CREATE INDEX webhooks_detached ON webhooks(deleted_at) WHERE deleted_at IS NOT NULL;
  UPDATE webhooks SET secret = '', previous_secret = NULL, previous_secret_until = NULL WHERE deleted_at IS NOT NULL;
  CREATE INDEX deliveries_by_webhook ON deliveries(webhook_id);
  CREATE INDEX operational_events_by_webhook ON operational_events(webhook_id);
  `,
  // The key cache's counter (meta.keys_version) moved by the database itself: any change to a
  // key, by leadhooks or by hand, tells every process caching keys
  // (src/store/keys/sqlite-key-changes.ts).
  `
  CREATE TRIGGER api_keys_changed AFTER UPDATE OF revoked_at, key_hash, client_id ON api_keys BEGIN
    UPDATE meta SET value = value + 1 WHERE name = 'keys_version';
  END;
  CREATE TRIGGER api_keys_deleted AFTER DELETE ON api_keys BEGIN
    UPDATE meta SET value = value + 1 WHERE name = 'keys_version';
  END;
  `,
  // Traces (docs/operations.md, "Traces"): the publish's trace context, kept with the event so
  // that each attempt joins the publish's trace, in any process, after a restart too.
  `
  ALTER TABLE events ADD COLUMN trace_context text;
  `,
  // Accounts managed through the admin API (docs/api.md, "Accounts"): a client can be made
  // inactive, and each key says when a request last came with it (to the minute). An inactive
  // client's webhooks are `suspended`: claims hold their deliveries as they hold a paused one's.
  `
  ALTER TABLE clients ADD COLUMN active INTEGER NOT NULL DEFAULT 1;
  ALTER TABLE api_keys ADD COLUMN last_used_at TEXT;
  ALTER TABLE webhooks ADD COLUMN suspended INTEGER NOT NULL DEFAULT 0;
  CREATE TRIGGER clients_activity_changed AFTER UPDATE OF active ON clients BEGIN
    UPDATE meta SET value = value + 1 WHERE name = 'keys_version';
  END;
  `,
  // Portal links (docs/api.md, "Portal links"): a link is kept by its token's hash, used once,
  // and opens a session whose key expires with it. Retention deletes both once expired.
  `
  CREATE TABLE portal_links (
    token_hash TEXT PRIMARY KEY,
    client_id INTEGER NOT NULL REFERENCES clients(id),
    expires_at TEXT NOT NULL,
    used_at TEXT
  );
  CREATE INDEX portal_links_by_expiry ON portal_links(expires_at);
  ALTER TABLE api_keys ADD COLUMN expires_at TEXT;
  CREATE INDEX api_keys_expiring ON api_keys(expires_at) WHERE expires_at IS NOT NULL;
  `,
  // openapi.yaml owns the operational event types (OperationalEvent's `type`), as it owns the lead
  // events: a type it adds must need no migration, so the table keeps no list of them. SQLite
  // cannot drop a CHECK: the table is copied without it. Nothing refers to its rows, and it is
  // small (a row per webhook disabled).
  `
  CREATE TABLE operational_events_unchecked (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    type TEXT NOT NULL,
    webhook_id INTEGER NOT NULL REFERENCES webhooks(id),
    client_id INTEGER NOT NULL REFERENCES clients(id),
    reason TEXT NOT NULL,
    created_at TEXT NOT NULL
  );
  INSERT INTO operational_events_unchecked (id, type, webhook_id, client_id, reason, created_at)
    SELECT id, type, webhook_id, client_id, reason, created_at FROM operational_events;
  -- The feed's ids go on from where they were, even past events retention deleted: a reader's
  -- cursor (after) must not meet an id twice.
  DELETE FROM sqlite_sequence WHERE name = 'operational_events_unchecked';
  UPDATE sqlite_sequence SET name = 'operational_events_unchecked' WHERE name = 'operational_events';
  DROP TABLE operational_events;
  ALTER TABLE operational_events_unchecked RENAME TO operational_events;
  CREATE INDEX operational_events_by_age ON operational_events(created_at);
  CREATE INDEX operational_events_by_webhook ON operational_events(webhook_id);
  `,
  // Delivery in order per lead (src/delivery-policy/lead-order.ts). An event keeps its lead's id;
  // each delivery of it to an ordered webhook keeps it too (lead_key). A delivery published while
  // an earlier one of its lead to the same webhook is pending waits (next_attempt_at =
  // WAITING_AT); when the one ahead is settled, the trigger makes the earliest waiting one due,
  // in the same transaction, unless another of the lead is still pending ahead of it.
  // deliveries_by_lead holds only the pending deliveries of a lead, by due time: the publish's
  // check and each of the trigger's reads one entry, whatever the size of the outbox or of the
  // lead's backlog (those ahead are due before WAITING_AT, held ones after it).
  `
  ALTER TABLE events ADD COLUMN lead_id TEXT;
  ALTER TABLE deliveries ADD COLUMN lead_key TEXT;
  ALTER TABLE webhooks ADD COLUMN ordered INTEGER NOT NULL DEFAULT 1;
  CREATE INDEX deliveries_by_lead ON deliveries(webhook_id, lead_key, next_attempt_at, id) WHERE lead_key IS NOT NULL AND state = 'pending';
  CREATE TRIGGER deliveries_lead_next AFTER UPDATE OF state ON deliveries
  WHEN OLD.state = 'pending' AND NEW.state <> 'pending' AND NEW.lead_key IS NOT NULL AND OLD.next_attempt_at <> ${WAITING_AT}
  BEGIN
    UPDATE deliveries SET next_attempt_at = CAST((julianday(NEW.completed_at) - 2440587.5) * 86400000 AS INTEGER)
    WHERE id = (SELECT id FROM deliveries WHERE webhook_id = NEW.webhook_id AND lead_key = NEW.lead_key AND state = 'pending'
                  AND next_attempt_at = ${WAITING_AT} ORDER BY id LIMIT 1)
      AND NOT EXISTS (SELECT 1 FROM deliveries WHERE webhook_id = NEW.webhook_id AND lead_key = NEW.lead_key AND state = 'pending'
                        AND next_attempt_at < ${WAITING_AT})
      AND NOT EXISTS (SELECT 1 FROM deliveries WHERE webhook_id = NEW.webhook_id AND lead_key = NEW.lead_key AND state = 'pending'
                        AND next_attempt_at > ${WAITING_AT});
  END;
  `,
  // A webhook's custom headers (docs/api.md, "Headers for a receiver behind its own
  // authentication"): one JSON object of names and values, sealed whole like the signing secret.
  `
  ALTER TABLE webhooks ADD COLUMN headers TEXT;
  `,
  // A webhook's filter (openapi.yaml, LeadFilter), as JSON text: null, every lead. Each
  // publication reads its client's filtered webhooks (../webhooks/sqlite.ts): through their own
  // index, however many webhooks without a filter the client has.
  `
  ALTER TABLE webhooks ADD COLUMN filter TEXT;
  CREATE INDEX webhooks_filtered_by_client ON webhooks(client_id) WHERE deleted_at IS NULL AND filter IS NOT NULL;
  `,
  // A portal link's branding (openapi.yaml, PortalBrandingSet): the look its portal takes, each
  // field null where the server's setting, or the portal's own look, applies.
  `
  ALTER TABLE portal_links ADD COLUMN product_name TEXT;
  ALTER TABLE portal_links ADD COLUMN logo_url TEXT;
  ALTER TABLE portal_links ADD COLUMN accent_color TEXT;
  `,
  // The audit log (openapi.yaml, listAuditLog): one row per change made through the API or the
  // command-line tool, written in the change's own transaction (../audit/sqlite.ts). No foreign
  // keys: an entry outlives the webhook or the session key that retention deletes. AUTOINCREMENT:
  // an id is never handed out again, so a reader's cursor never meets a newer entry below it.
  // Read newest first, of one client or of all, and pruned by age.
  `
  CREATE TABLE audit_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    actor_kind TEXT NOT NULL,
    actor_key_id INTEGER,
    actor_prefix TEXT,
    ip TEXT,
    action TEXT NOT NULL,
    client_id INTEGER,
    target_id INTEGER,
    changes TEXT NOT NULL
  );
  CREATE INDEX audit_log_by_client ON audit_log(client_id, id);
  CREATE INDEX audit_log_by_age ON audit_log(at);
  `,
  // Operational events pushed (docs/api.md, "Hearing when a webhook fails"): a webhook's failed
  // attempts in its run of failures, counted up to FAILING_AFTER (src/delivery-policy/failure.ts)
  // and left as they are by a success, which reads them to tell a recovery; each operational
  // event's event, whose deliveries carry it to the client's subscribed webhooks; a client's own
  // events in feed order, for its poll; and how far the lead product's own address
  // (OPERATIONAL_EVENTS_URL) has been sent, with the lease of the worker sending it.
  `
  ALTER TABLE webhooks ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE operational_events ADD COLUMN event_id TEXT;
  CREATE INDEX operational_events_by_client ON operational_events(client_id, id);
  CREATE TABLE platform_feed (
    id INTEGER PRIMARY KEY,
    sent_through INTEGER NOT NULL,
    lease_until INTEGER NOT NULL DEFAULT 0
  );
  `,
  // A client's own retention period, in seconds (openapi.yaml, AccountUpdate's `retention`): null,
  // the server's RETENTION. Few clients have one; the pruner reads them all once per pass.
  `
  ALTER TABLE clients ADD COLUMN retention_seconds INTEGER;
  `,
  // Erasing a lead (openapi.yaml, eraseLead): an event whose lead was erased keeps its metadata,
  // its payload emptied, and says when. events_by_lead finds a lead's events, in one client or in
  // all, without reading the others. An event published under an Idempotency-Key keeps the key,
  // so that erasing its lead finds the answer kept for it (sealed or not).
  `
  ALTER TABLE events ADD COLUMN erased_at TEXT;
  ALTER TABLE events ADD COLUMN idempotency_scope TEXT;
  ALTER TABLE events ADD COLUMN idempotency_key TEXT;
  CREATE INDEX events_by_lead ON events(lead_id, client_id) WHERE lead_id IS NOT NULL;
  `,
];
