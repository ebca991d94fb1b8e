import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { ConfigError } from '../config.js';
import { pooledRandomBytes } from '../random-bytes.js';
import type { SealCursor, Store } from '../store/store.js';

// Webhooks' signing secrets: how one is made, and how they are kept at rest.

/** A signing secret in Standard Webhooks form: `whsec_` and base64 of 24 random bytes. */
export function generateWebhookSecret(): string {
  return `whsec_${pooledRandomBytes(24).toString('base64')}`;
}

// Secrets at rest (docs/operations.md, "Secrets at rest"). With SECRET_ENCRYPTION_KEY set, webhooks' signing
// secrets (current and previous) and the answers kept for Idempotency-Keys (which hold secrets)
// are stored sealed: AES-256-GCM, a random 12-byte IV per value, the 16-byte tag, all behind a
// versioned prefix, `enc:v1:` + base64(iv | tag | ciphertext), so sealed and plain values can be
// told apart. They are opened only to sign a delivery or to answer the client.

export const SEALED_PREFIX = 'enc:v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface SecretBox {
  /** Whether values are sealed (a key is set). */
  readonly sealing: boolean;
  /** The value as it is to be stored: sealed with a key, as it is without one. */
  seal(value: string): string;
  /** A stored value in the clear: a sealed one opened, a plain one as it is. */
  open(stored: string): string;
}

export const isSealed = (stored: string): boolean => stored.startsWith(SEALED_PREFIX);

export function createSecretBox(key: Buffer | null): SecretBox {
  return {
    sealing: key !== null,
    seal(value) {
      if (key === null) return value;
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const ciphertext = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
      return SEALED_PREFIX + Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64');
    },
    open(stored) {
      if (!isSealed(stored)) return stored;
      if (key === null) throw new Error('a stored secret is encrypted, and SECRET_ENCRYPTION_KEY is not set');
      const raw = Buffer.from(stored.slice(SEALED_PREFIX.length), 'base64');
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    },
  };
}

/** Rows gone through per transaction when the server seals the plain secrets it finds at start. */
const SEAL_BATCH = 500;

/** What the store keeps sealed, when nothing else is, to check a key against. */
const CHECK_TEXT = 'leadhooks secrets at rest';

/**
 * At start, before serving: checks that the key opens what is already sealed (a wrong or missing
 * key stops start-up with a ConfigError), then, the first time a key is set, seals every plain
 * secret (rows written before the key was set) in short transactions of SEAL_BATCH rows. The
 * store says from one row whether anything was ever sealed and whether that sealing was
 * finished, so a start reads no table through unless a key is new to the database (or a start
 * that was sealing stopped half-way). Returns how many values it sealed. It says so in the log
 * when it begins and ends: the operator sees why this start takes longer, and that the database
 * can no longer be opened without the key.
 */
export async function sealSecretsAtRest(store: Store, box: SecretBox, log?: Pick<FastifyBaseLogger, 'info'>): Promise<number> {
  const sealing = await store.secrets.sealing();
  if (sealing !== undefined) {
    if (!box.sealing) throw new ConfigError('SECRET_ENCRYPTION_KEY is not set, but the stored webhook secrets are encrypted: set the key they were encrypted with');
    try {
      box.open(sealing.check);
    } catch {
      throw new ConfigError('SECRET_ENCRYPTION_KEY does not decrypt the stored webhook secrets: it is not the key they were encrypted with');
    }
    if (sealing.complete) return 0;
  }
  if (!box.sealing) return 0;
  // Recorded before the first value is sealed: from here on a start without the key is refused.
  const check = sealing?.check ?? box.seal(CHECK_TEXT);
  if (sealing === undefined) await store.secrets.recordSealing(check, false);
  log?.info(
    sealing === undefined ? 'SECRET_ENCRYPTION_KEY is new to this database: encrypting the stored webhook secrets' : 'resuming the encryption of the stored webhook secrets',
  );
  let sealed = 0;
  let after: SealCursor | null = { webhookId: 0 };
  while (after !== null) {
    const batch = await store.secrets.seal(SEALED_PREFIX, SEAL_BATCH, (value) => box.seal(value), after);
    sealed += batch.sealed;
    after = batch.next;
  }
  await store.secrets.recordSealing(check, true);
  log?.info({ sealed }, 'stored webhook secrets encrypted: from now on this database needs SECRET_ENCRYPTION_KEY');
  return sealed;
}
