import type { SecretRepository } from '../store.js';
import type { GroupedWrite } from './engine/durable-writer.js';
import type { Db } from './engine/open-database.js';
import { idempotentRunner } from './idempotency.js';

export function createSecretRepository(db: Db, grouped: GroupedWrite): SecretRepository {
  // The right-hand sides read the row as it was: the current secret becomes the previous one.
  const rotate = db.prepare<[string, string, number, number]>(
    `UPDATE webhooks SET previous_secret = secret, previous_secret_until = ?, secret = ?
     WHERE id = ? AND client_id = ? AND deleted_at IS NULL`,
  );
  const idempotent = idempotentRunner(db);
  // `substr(x, 1, length(p)) <> p`: no LIKE, whose wildcards and case-folding are not wanted here.
  const plainWebhooks = db.prepare<[string, string, string, string, number], { id: number; secret: string; previous_secret: string | null }>(
    `SELECT id, secret, previous_secret FROM webhooks
     WHERE substr(secret, 1, length(?)) <> ? OR (previous_secret IS NOT NULL AND substr(previous_secret, 1, length(?)) <> ?) LIMIT ?`,
  );
  const setSecrets = db.prepare<[string, string | null, number]>('UPDATE webhooks SET secret = ?, previous_secret = ? WHERE id = ?');
  const plainAnswers = db.prepare<[string, string, number], { rowid: number; body: string }>(
    'SELECT rowid, body FROM idempotency_keys WHERE substr(body, 1, length(?)) <> ? LIMIT ?',
  );
  const setAnswer = db.prepare<[string, number]>('UPDATE idempotency_keys SET body = ? WHERE rowid = ?');
  const sample = db.prepare<[string, string], { secret: string }>('SELECT secret FROM webhooks WHERE substr(secret, 1, length(?)) = ? LIMIT 1');
  const sealed = (prefix: string, value: string, seal: (value: string) => string) => (value.startsWith(prefix) ? value : seal(value));

  return {
    async rotate(clientId, id, secret, previousUntil, idempotency) {
      return grouped(() => idempotent.run(idempotency, () => rotate.run(previousUntil, secret, id, clientId).changes === 1));
    },
    async seal(prefix, limit, seal) {
      return grouped(() => {
        const webhooks = plainWebhooks.all(prefix, prefix, prefix, prefix, limit);
        for (const row of webhooks) {
          const previous = row.previous_secret === null ? null : sealed(prefix, row.previous_secret, seal);
          setSecrets.run(sealed(prefix, row.secret, seal), previous, row.id);
        }
        const answers = plainAnswers.all(prefix, prefix, limit - webhooks.length);
        for (const row of answers) setAnswer.run(seal(row.body), row.rowid);
        return webhooks.length + answers.length;
      });
    },
    async sealedSample(prefix) {
      return sample.get(prefix, prefix)?.secret;
    },
  };
}
