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
];
