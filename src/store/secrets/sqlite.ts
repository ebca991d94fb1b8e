import { auditWriter } from '../audit/sqlite.js';
import { idempotentRunner } from '../idempotency/sqlite.js';
import type { GroupedWrite } from '../sqlite/durable-writer.js';
import type { Db } from '../sqlite/open-database.js';
import type { AuditNote, SecretRepository } from '../store.js';
import { answersCursor, sealedSecrets } from './secret-rules.js';

export function createSecretRepository(db: Db, grouped: GroupedWrite): SecretRepository {
  // The right-hand sides read the row as it was: the current secret becomes the previous one.
  const rotateStatement = db.prepare<[string, string, number, number]>(
    `UPDATE webhooks SET previous_secret = secret, previous_secret_until = ?, secret = ?
     WHERE id = ? AND client_id = ? AND deleted_at IS NULL`,
  );
  const audit = auditWriter(db);
  const rotate = (clientId: number, id: number, secret: string, previousUntil: string, note?: AuditNote) => {
    if (rotateStatement.run(previousUntil, secret, id, clientId).changes !== 1) return false;
    audit(note, { clientId, targetId: id });
    return true;
  };
  const idempotent = idempotentRunner(db);
  const webhooksAfter = db.prepare<[number, number], { id: number; secret: string; previous_secret: string | null; headers: string | null }>(
    'SELECT id, secret, previous_secret, headers FROM webhooks WHERE id > ? ORDER BY id LIMIT ?',
  );
  const setSecrets = db.prepare<[string, string | null, string | null, number]>('UPDATE webhooks SET secret = ?, previous_secret = ?, headers = ? WHERE id = ?');
  const answersAfter = db.prepare<[string, string, number], { scope: string; idempotency_key: string; body: string }>(
    'SELECT scope, idempotency_key, body FROM idempotency_keys WHERE (scope, idempotency_key) > (?, ?) ORDER BY scope, idempotency_key LIMIT ?',
  );
  const answersFirst = db.prepare<[number], { scope: string; idempotency_key: string; body: string }>(
    'SELECT scope, idempotency_key, body FROM idempotency_keys ORDER BY scope, idempotency_key LIMIT ?',
  );
  const setAnswer = db.prepare<[string, string, string]>('UPDATE idempotency_keys SET body = ? WHERE scope = ? AND idempotency_key = ?');
  const readSealing = db.prepare<[], { state: string; check_value: string }>('SELECT state, check_value FROM secret_sealing WHERE id = 1');
  const writeSealing = db.prepare<[string, string]>(
    `INSERT INTO secret_sealing (id, state, check_value) VALUES (1, ?, ?)
     ON CONFLICT (id) DO UPDATE SET state = excluded.state, check_value = excluded.check_value`,
  );

  return {
    async rotate(clientId, id, secret, previousUntil, note, key) {
      return grouped(() => idempotent.run(key, () => rotate(clientId, id, secret, previousUntil, note)));
    },
    async seal(prefix, limit, seal, after) {
      return grouped(() => {
        let count = 0;
        if (after.answer === undefined) {
          const webhooks = webhooksAfter.all(after.webhookId, limit);
          for (const row of webhooks) {
            const change = sealedSecrets(row, prefix, seal);
            if (change === undefined) continue;
            setSecrets.run(change.secret, change.previous, change.headers, row.id);
            count++;
          }
          const last = webhooks.at(-1);
          if (last !== undefined) return { sealed: count, next: { webhookId: last.id } };
        }
        const from = after.answer;
        const answers = from === undefined ? answersFirst.all(limit) : answersAfter.all(from.scope, from.key, limit);
        for (const row of answers) {
          if (row.body.startsWith(prefix)) continue;
          setAnswer.run(seal(row.body), row.scope, row.idempotency_key);
          count++;
        }
        return { sealed: count, next: answersCursor(after, answers.at(-1)) };
      });
    },
    async sealing() {
      const row = readSealing.get();
      return row === undefined ? undefined : { check: row.check_value, complete: row.state === 'sealed' };
    },
    async recordSealing(check, complete) {
      await grouped(() => writeSealing.run(complete ? 'sealed' : 'sealing', check));
    },
  };
}
