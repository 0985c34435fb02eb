import crypto from 'node:crypto';
import type { Types } from 'mongoose';
import { isDuplicateKey, retryWhileBusy } from './connect';
import type { Models } from './models';
import { seal, type Keyring, type SealedSecret } from './secrets';

/**
 * A task's completion webhook (docs/webhooks.md): where a run's end is POSTed, and the secret that signs it, sealed
 * like `settings.key`. Not part of a task version: a delivery uses the task's webhook as it is when it is made.
 */
export interface StoredWebhook {
  url: string;
  secret: SealedSecret;
}

/**
 * The webhook part of a task save: `{ url, secret }` sets both; `{ url }` keeps the stored secret, or makes one when
 * the task has none; null removes the webhook; undefined keeps it as it is (as `settings.key` does).
 */
export type WebhookChange = { url: string; secret?: string } | null | undefined;

const SECRET_PREFIX = 'whsec_';
/** Standard Webhooks: a secret is 24 to 64 random bytes. */
const SECRET_BYTES = { min: 24, max: 64 };

/** A secret the server makes: `whsec_` and the base64 of 32 random bytes (the form Standard Webhooks libraries read). */
export const newWebhookSecret = () => `${SECRET_PREFIX}${crypto.randomBytes(32).toString('base64')}`;

/** Whether a client's secret is `whsec_` and the base64 of 24 to 64 bytes. */
export function isWebhookSecret(value: string): boolean {
  if (!value.startsWith(SECRET_PREFIX)) return false;
  const b64 = value.slice(SECRET_PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || b64.length % 4 !== 0) return false;
  const bytes = Buffer.from(b64, 'base64').length;
  return bytes >= SECRET_BYTES.min && bytes <= SECRET_BYTES.max;
}

export const WEBHOOK_SECRET_RULE = `"${SECRET_PREFIX}" followed by the base64 of ${SECRET_BYTES.min} to ${SECRET_BYTES.max} random bytes`;

/**
 * The webhook a save stores, and the secret it made when it made one (the save's answer shows it, once; nothing
 * shows it again).
 */
export function resolveWebhook(keyring: Keyring, change: WebhookChange, previous: StoredWebhook | null | undefined): { webhook: StoredWebhook | null; generated?: string } {
  if (change === undefined) return { webhook: previous ?? null };
  if (change === null) return { webhook: null };
  if (change.secret !== undefined) return { webhook: { url: change.url, secret: seal(keyring, change.secret) } };
  if (previous?.secret) return { webhook: { url: change.url, secret: previous.secret } };
  const generated = newWebhookSecret();
  return { webhook: { url: change.url, secret: seal(keyring, generated) }, generated };
}

/** What a task's reads show of its webhook: never the secret. */
export const presentWebhook = (webhook: StoredWebhook) => ({ url: webhook.url, secret_set: true as const });

/** The task of a run, as a delivery needs it (by `_id`: FerretDB's one lookup without a scan). */
export interface WebhookTask {
  _id: Types.ObjectId;
  owner: string;
  profile: string;
  name: string;
  webhook?: StoredWebhook | null;
}

export function findWebhookTask(models: Models, taskId: Types.ObjectId): Promise<WebhookTask | null> {
  return models.Task.findById(taskId, { owner: 1, profile: 1, name: 1, webhook: 1 }).lean<WebhookTask>();
}

/**
 * One delivery attempt, as `GET <task path>/webhook/deliveries` lists it. `status`: the receiver's HTTP status;
 * `"refused"` when the network guard refused the destination; `"failed"` when no answer came (connection, time-out).
 */
export interface DeliveryAttempt {
  run: string;
  attempt: number;
  status: number | 'refused' | 'failed';
  error?: string;
  at: Date;
}

/**
 * A delivery attempt's error for a destination the network guard refused. A refusal by the built-in blocklist names
 * the setting that lets it through; one by NETWORK_BLOCKLIST names that list already, and it wins over any allow list.
 */
export function refusedDestinationMessage(reason: string): string {
  const remedy = /NETWORK_BLOCKLIST/.test(reason) ? '' : '; to allow it, add the host or its network to WEBHOOK_ALLOWLIST (docs/webhooks.md)';
  return `the destination is refused: ${reason}${remedy}`;
}

/** Attempts kept per task: the list shows the latest. */
export const DELIVERIES_KEPT = 100;
/**
 * FerretDB ignores `$push`'s `$slice` (MongoDB applies it): past this many the writer cuts the list itself, seldom
 * (each cut is a read-modify-write, which FerretDB may race with another).
 */
const TRIM_AT = DELIVERIES_KEPT + 20;
/** FerretDB loses one of two concurrent updates of a document: an attempt found missing is written again, this often. */
const WRITE_ROUNDS = 5;

/**
 * Records an attempt in its task's document (`_id` = the task's _id, so the list is one `_id` read), keeping the
 * latest DELIVERIES_KEPT. `key` is unique to the attempt: it is how a write lost to a concurrent one is noticed.
 */
export async function recordDeliveryAttempt(models: Models, taskId: Types.ObjectId, key: string, attempt: DeliveryAttempt): Promise<void> {
  const collection = models.WebhookDeliveries.collection;
  const entry = { key, ...attempt };
  for (let round = 1; round <= WRITE_ROUNDS; round++) {
    try {
      await retryWhileBusy(() =>
        // (The driver's types do not follow `$each` into a schemaless array.)
        collection.updateOne({ _id: taskId }, { $push: { deliveries: { $each: [entry], $slice: -DELIVERIES_KEPT } } } as never, { upsert: true }),
      );
    } catch (err) {
      // Two first attempts of a task at once: one inserts, the other updates the document it made.
      if (!isDuplicateKey(err) || round === WRITE_ROUNDS) throw err;
      continue;
    }
    const stored = ((await collection.findOne({ _id: taskId }, { projection: { deliveries: 1 } }))?.deliveries ?? []) as Array<{ key?: string }>;
    if (stored.length > TRIM_AT) await collection.updateOne({ _id: taskId }, { $set: { deliveries: stored.slice(-DELIVERIES_KEPT) } });
    if (stored.some((e) => e.key === key)) return;
    await new Promise((r) => setTimeout(r, 10 + Math.random() * 40 * round));
  }
}

/** A task's latest attempts, newest first (at most DELIVERIES_KEPT). */
export async function listDeliveries(models: Models, taskId: Types.ObjectId): Promise<Array<Omit<DeliveryAttempt, 'at'> & { at: string }>> {
  const doc = await models.WebhookDeliveries.collection.findOne({ _id: taskId }, { projection: { deliveries: 1 } });
  const stored = (doc?.deliveries ?? []) as Array<DeliveryAttempt & { key?: string }>;
  return stored
    .map((e, i) => ({ e, i }))
    .sort((a, b) => b.e.at.getTime() - a.e.at.getTime() || b.i - a.i)
    .slice(0, DELIVERIES_KEPT)
    .map(({ e }) => ({ run: e.run, attempt: e.attempt, status: e.status, ...(e.error ? { error: e.error } : {}), at: e.at.toISOString() }));
}

/** Deletes a task's delivery history (its task was deleted). */
export async function deleteDeliveries(models: Models, taskId: Types.ObjectId): Promise<void> {
  await models.WebhookDeliveries.collection.deleteOne({ _id: taskId });
}
