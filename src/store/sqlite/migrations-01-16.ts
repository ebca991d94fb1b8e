// The first sixteen schema migrations of src/store/sqlite/migrations.ts, which lists them all in
// order: shipped, and never to be edited. They live apart only to keep that file readable.

export const MIGRATIONS_01_16: readonly string[] = [
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
  // Retention: old events are deleted with their deliveries and attempts. These indexes let
  // those deletes (and the foreign-key checks they trigger) find the rows without a scan.
  `
  CREATE INDEX deliveries_by_event ON deliveries(event_id);
  CREATE INDEX delivery_attempts_by_delivery ON delivery_attempts(delivery_id);
  `,
  // The webhook cap is checked on every creation: a count kept on the client row, maintained by
  // triggers on every path that attaches or detaches a webhook (creation, deletion, a 410), so
  // the check reads one row however many webhooks the client has.
  `
  ALTER TABLE clients ADD COLUMN active_webhooks INTEGER NOT NULL DEFAULT 0;
  UPDATE clients SET active_webhooks =
    (SELECT count(*) FROM webhooks w WHERE w.client_id = clients.id AND w.deleted_at IS NULL);
  CREATE TRIGGER webhooks_count_attach AFTER INSERT ON webhooks WHEN NEW.deleted_at IS NULL
  BEGIN
    UPDATE clients SET active_webhooks = active_webhooks + 1 WHERE id = NEW.client_id;
  END;
  CREATE TRIGGER webhooks_count_detach AFTER UPDATE OF deleted_at ON webhooks
  WHEN OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL
  BEGIN
    UPDATE clients SET active_webhooks = active_webhooks - 1 WHERE id = NEW.client_id;
  END;
  `,
  // A worker that cannot fill its slots from the earliest due deliveries (one webhook's backlog
  // crowds them) goes round the webhooks that have pending deliveries, taking each one's
  // earliest due: this index answers both "the next webhook with pending deliveries" and "its
  // earliest due", so that costs the same with a backlog of any depth.
  `
  DROP INDEX deliveries_by_webhook;
  CREATE INDEX deliveries_pending_by_webhook ON deliveries(webhook_id, next_attempt_at) WHERE state = 'pending';
  `,
  // A client lists its recent events, newest first, of one type or of all (GET /events). Each
  // index holds one client's events in rowid order (the order of writing), so a page of either
  // listing is a range of one index, read backwards, however many events the table holds.
  `
  CREATE INDEX events_by_client ON events(client_id);
  CREATE INDEX events_by_client_type ON events(client_id, type);
  `,
  // Idempotency keys: the answer a keyed POST /webhook or POST /events got, written in the same
  // transaction as what it created, found again by scope and key; pruned by age.
  `
  CREATE TABLE idempotency_keys (
    scope TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    status INTEGER NOT NULL,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (scope, idempotency_key)
  );
  CREATE INDEX idempotency_keys_by_age ON idempotency_keys(created_at);
  `,
  // Pausing a webhook (PATCH /webhook/{hookID}). `paused` is the client's setting, read by every
  // claim through its join on webhooks. A claim sets the due deliveries of a paused webhook
  // aside (next_attempt_at = HELD_AT, far past any real due time), so a paused backlog leaves the
  // front of deliveries_due and no later claim reads it again. `held` says the webhook may have
  // deliveries set aside: raised with the pause, cleared by the claims that release them after
  // the resume. The partial index finds the resumed webhooks that still have some, at once.
  `
  ALTER TABLE webhooks ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE webhooks ADD COLUMN held INTEGER NOT NULL DEFAULT 0;
  CREATE INDEX webhooks_to_release ON webhooks(id) WHERE held = 1 AND paused = 0;
  `,
  // Replay: a client resends a settled delivery, or every failed one of a webhook since a time
  // (the delivery is pending again, flagged until its attempt, which the log marks). The index
  // finds one webhook's failed deliveries by creation time without a scan.
  `
  ALTER TABLE deliveries ADD COLUMN replay INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE delivery_attempts ADD COLUMN replay INTEGER NOT NULL DEFAULT 0;
  CREATE INDEX deliveries_failed_by_webhook ON deliveries(webhook_id, created_at) WHERE state = 'failed';
  `,
  // Secret rotation: the secret a webhook signed with before its latest rotation, and until when
  // (ISO 8601) deliveries carry its signature beside the new one's.
  `
  ALTER TABLE webhooks ADD COLUMN previous_secret TEXT;
  ALTER TABLE webhooks ADD COLUMN previous_secret_until TEXT;
  `,
  // Secrets at rest: whether SECRET_ENCRYPTION_KEY ever sealed a value, so that start-up knows it
  // from one row instead of searching the tables. No row: nothing is sealed. A row holds one
  // sealed value, to check the key against, and whether every plain value has been sealed since
  // ('sealing' until the start that sealed them all says 'sealed'). The one search of the tables
  // is here: a database sealed before this table existed gets its row.
  `
  CREATE TABLE secret_sealing (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    state TEXT NOT NULL CHECK (state IN ('sealing', 'sealed')),
    check_value TEXT NOT NULL
  );
  INSERT INTO secret_sealing (id, state, check_value)
  SELECT 1, 'sealing', value FROM (
    SELECT secret AS value FROM webhooks WHERE substr(secret, 1, 7) = 'enc:v1:'
    UNION ALL SELECT body FROM idempotency_keys WHERE substr(body, 1, 7) = 'enc:v1:'
  ) LIMIT 1;
  `,
  // Pacing (docs/api.md, "Throttling"): a webhook's own rate (null: the server's default), the next
  // time (epoch ms) it may be sent a delivery, and until when a receiver's 429 asked it to wait.
  // `paced` marks a delivery a claim gave a later time to because of the rate: its turn is kept,
  // and the claim that takes it does not pace it again.
  `
  ALTER TABLE webhooks ADD COLUMN rate_limit INTEGER;
  ALTER TABLE webhooks ADD COLUMN pace_at REAL NOT NULL DEFAULT 0;
  ALTER TABLE webhooks ADD COLUMN slow_until REAL NOT NULL DEFAULT 0;
  ALTER TABLE deliveries ADD COLUMN paced INTEGER NOT NULL DEFAULT 0;
  `,
  // Auto-disable (WEBHOOK_DISABLE_AFTER). `failing_since`: when the webhook's current unbroken
  // run of failed attempts began (cleared by any success); the listing's `failing` reads it
  // instead of looking up the latest attempt of each webhook. It is filled in here for the
  // webhooks whose latest attempt failed, from the first attempt after their last success.
  // `disabled_at` and `disabled_reason`: set when that run lasted too long; publications then
  // make no deliveries for the webhook. The attempt that disabled it keeps its outcome (`failed`,
  // as its delivery ended) and is marked, for the delivery log's `disabled`: SQLite cannot widen
  // the outcome's CHECK without copying the whole attempts table. `operational_events` is the
  // publisher's feed of such events (GET /operations/events), written in the transaction that
  // disables the webhook.
  `
  ALTER TABLE webhooks ADD COLUMN failing_since TEXT;
  UPDATE webhooks SET failing_since = (
    SELECT min(a.attempted_at) FROM delivery_attempts a WHERE a.webhook_id = webhooks.id AND a.id > coalesce(
      (SELECT max(s.id) FROM delivery_attempts s WHERE s.webhook_id = webhooks.id AND s.outcome = 'succeeded'), 0))
  WHERE deleted_at IS NULL AND (
    SELECT a.outcome FROM delivery_attempts a WHERE a.webhook_id = webhooks.id ORDER BY a.id DESC LIMIT 1) IN ('retrying', 'failed');
  ALTER TABLE webhooks ADD COLUMN disabled_at TEXT;
  ALTER TABLE webhooks ADD COLUMN disabled_reason TEXT;
  ALTER TABLE delivery_attempts ADD COLUMN disabled_webhook INTEGER NOT NULL DEFAULT 0;
  CREATE TABLE operational_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    type TEXT NOT NULL CHECK (type IN ('webhook.disabled')),
    webhook_id INTEGER NOT NULL REFERENCES webhooks(id),
    client_id INTEGER NOT NULL REFERENCES clients(id),
    reason TEXT NOT NULL,
    created_at TEXT NOT NULL
  );
  CREATE INDEX operational_events_by_age ON operational_events(created_at);
  `,
  // A claim's lease in a column of its own. A claim used to lease a delivery by pushing its
  // next_attempt_at forward, which moved its entry in deliveries_pending_by_webhook too: with a
  // deep outbox that index is large, and each lease rewrote a page in the middle of it, and the
  // attempt's record another. Now the lease writes lease_until, which only deliveries_due holds
  // (a delivery is due at the later of the two), and a webhook's pending deliveries keep their
  // place in their own index until they are settled. Recording an attempt clears the lease.
  `
  ALTER TABLE deliveries ADD COLUMN lease_until INTEGER NOT NULL DEFAULT 0;
  DROP INDEX deliveries_due;
  CREATE INDEX deliveries_due ON deliveries(max(next_attempt_at, lease_until)) WHERE state = 'pending';
  `,
  // Each webhook's pending deliveries in a table of their own instead of an index of deliveries.
  // An index entry goes when its delivery is settled, and deliveries are settled in the order
  // they fell due, one webhook after another: with a deep outbox (1,000,000 pending over 1,000
  // webhooks, some 5,000 leaf pages) every settled delivery rewrote a different leaf of
  // deliveries_pending_by_webhook, and the WAL took half a page per delivery for it alone.
  // webhook_queue holds every pending delivery by webhook and due time, kept so by the triggers
  // below whatever writes the deliveries; a settled one's entry is left for the store to take out
  // later with others of the same webhook, a leaf written once for many
  // (src/store/deliveries/sqlite.ts). Until then, the queries through the queue pass over it:
  // they read the delivery's state.
  `
  CREATE TABLE webhook_queue (
    webhook_id INTEGER NOT NULL,
    due_at INTEGER NOT NULL,
    delivery_id INTEGER NOT NULL,
    PRIMARY KEY (webhook_id, due_at, delivery_id)
  ) WITHOUT ROWID;
  INSERT INTO webhook_queue (webhook_id, due_at, delivery_id)
    SELECT webhook_id, next_attempt_at, id FROM deliveries WHERE state = 'pending';
  DROP INDEX deliveries_pending_by_webhook;
  CREATE TRIGGER deliveries_queue_insert AFTER INSERT ON deliveries WHEN NEW.state = 'pending' BEGIN
    INSERT OR IGNORE INTO webhook_queue (webhook_id, due_at, delivery_id) VALUES (NEW.webhook_id, NEW.next_attempt_at, NEW.id);
  END;
  CREATE TRIGGER deliveries_queue_update AFTER UPDATE OF state, next_attempt_at ON deliveries
  WHEN NEW.state = 'pending' AND (OLD.state <> 'pending' OR OLD.next_attempt_at <> NEW.next_attempt_at) BEGIN
    DELETE FROM webhook_queue WHERE webhook_id = OLD.webhook_id AND due_at = OLD.next_attempt_at AND delivery_id = OLD.id;
    INSERT OR IGNORE INTO webhook_queue (webhook_id, due_at, delivery_id) VALUES (NEW.webhook_id, NEW.next_attempt_at, NEW.id);
  END;
  CREATE TRIGGER deliveries_queue_delete AFTER DELETE ON deliveries BEGIN
    DELETE FROM webhook_queue WHERE webhook_id = OLD.webhook_id AND due_at = OLD.next_attempt_at AND delivery_id = OLD.id;
  END;
  `,
];
