// Versioned schema migrations. The database's `user_version` is the number of migrations
// applied; each runs in its own transaction at start. Append only: never edit a shipped one.

export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE clients (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    created_at TEXT NOT NULL
  );
  CREATE TABLE api_keys (
    id INTEGER PRIMARY KEY,
    client_id INTEGER NOT NULL REFERENCES clients(id),
    prefix TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    revoked_at TEXT
  );
  CREATE INDEX api_keys_by_client ON api_keys(client_id);
  CREATE INDEX api_keys_by_prefix ON api_keys(prefix);
  -- AUTOINCREMENT: a deleted hookId is never handed out again.
  CREATE TABLE webhooks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    client_id INTEGER NOT NULL REFERENCES clients(id),
    url TEXT NOT NULL,
    events TEXT NOT NULL,
    secret TEXT NOT NULL,
    created_at TEXT NOT NULL,
    deleted_at TEXT
  );
  CREATE INDEX webhooks_active_by_client ON webhooks(client_id) WHERE deleted_at IS NULL;
  `,
  // Events and their deliveries: the outbox. An event and its deliveries are written in one
  // transaction; workers claim due deliveries by pushing next_attempt_at forward (a lease).
  `
  CREATE TABLE events (
    id TEXT PRIMARY KEY,
    client_id INTEGER NOT NULL REFERENCES clients(id),
    type TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at TEXT NOT NULL
  );
  CREATE TABLE deliveries (
    id INTEGER PRIMARY KEY,
    event_id TEXT NOT NULL REFERENCES events(id),
    webhook_id INTEGER NOT NULL REFERENCES webhooks(id),
    state TEXT NOT NULL CHECK (state IN ('pending', 'succeeded', 'failed', 'cancelled')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    completed_at TEXT
  );
  CREATE INDEX deliveries_due ON deliveries(next_attempt_at) WHERE state = 'pending';
  CREATE INDEX deliveries_by_webhook ON deliveries(webhook_id) WHERE state = 'pending';
  CREATE TABLE delivery_attempts (
    id INTEGER PRIMARY KEY,
    delivery_id INTEGER NOT NULL REFERENCES deliveries(id),
    webhook_id INTEGER NOT NULL REFERENCES webhooks(id),
    attempted_at TEXT NOT NULL,
    status_code INTEGER,
    error TEXT,
    duration_ms INTEGER NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN ('succeeded', 'retrying', 'failed', 'gone'))
  );
  CREATE INDEX delivery_attempts_by_webhook ON delivery_attempts(webhook_id, id);
  `,
  // A counter bumped by every key revocation, so that a server caching key lookups learns of a
  // revocation made by another process (the CLI) on its next request.
  `
  CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
  INSERT INTO meta (name, value) VALUES ('keys_version', 0);
  `,
];
