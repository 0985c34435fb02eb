import crypto from 'node:crypto';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { Webhook } from 'standardwebhooks';
import type { Dispatcher } from 'undici';
import type { RunView } from '../src/http/presenters/run';
import { renderRecord } from '../src/http/presenters/run-record';
import { loadText, StoredContentMissing } from '../src/store/run-content';
import { findRun, type RunRecord } from '../src/store/runs';
import { open } from '../src/store/secrets';
import { findWebhookTask, recordDeliveryAttempt, refusedDestinationMessage, type DeliveryAttempt } from '../src/store/webhooks';
import { isTerminal } from '../src/contract/constants';
import { WEBHOOK_FAILURE } from '../src/contract/failures';
import type { WebhookOutcome } from '../src/contract/messages';
import type { ActivityDeps } from './deps';
import { guardedRequest } from '../src/net/guarded-request';
import { parseNetworkPolicy, type NetworkPolicy } from '../src/net/network-policy';
import { createPinnedAgent } from '../src/net/pinned-agent';


/** One POST: connecting and the receiver's answer, within this (docs/webhooks.md says 15 s). */
export const ATTEMPT_TIMEOUT_MS = 15_000;
/** What of the receiver's answer is kept for the list's `error` (its first characters). */
const ANSWER_SNIPPET_CHARS = 200;
const ANSWER_READ_BYTES = 4 * 1024;

/** The Standard Webhooks message id of a run's delivery: the same on every attempt, and for nothing else. */
export const webhookMessageId = (runId: string, createdAt: number) =>
  `msg_${crypto.createHash('sha256').update(`${runId}\n${createdAt}`).digest('base64url').slice(0, 32)}`;

/**
 * `postRunClosed`: one attempt at a run's completion webhook. Reads the run and its task's webhook from the store
 * (the secret is opened here, used, and dropped; never in history or logs), POSTs `run.closed` signed per Standard
 * Webhooks through the servlets' network guard with WEBHOOK_ALLOWLIST as its allow list, and records the attempt.
 * Throws when the policy cannot be read (the worker then refuses to start). `attemptTimeoutMs`: the bound on one
 * attempt (ATTEMPT_TIMEOUT_MS unless a test shortens it).
 */
export function createWebhookDeliveryActivities(deps: Pick<ActivityDeps, 'config' | 'logger' | 'db' | 'keyring'>, options: { attemptTimeoutMs?: number } = {}) {
  const { models } = deps.db;
  const { attemptTimeoutMs = ATTEMPT_TIMEOUT_MS } = options;
  const policy = webhookPolicy(deps.config);
  // Checks every address a name resolves to, and connects to exactly those (as servlets' requests do).
  const dispatcher = createPinnedAgent(policy, { connectTimeoutMs: attemptTimeoutMs });
  const logger = deps.logger.child({ component: 'webhooks' });

  /** The run object exactly as a read of the closed run presents it; null when the run was deleted meanwhile. */
  const renderRun = async (record: RunRecord): Promise<RunView | null> => {
    try {
      return await renderRecord(models, record, (text) => loadText(models, text));
    } catch (err) {
      if (err instanceof StoredContentMissing) return null;
      throw err;
    }
  };

  return {
    async postRunClosed(input: { runId: string; createdAt: number }): Promise<WebhookOutcome> {
      const { attempt } = Context.current().info;
      const record = await findRun(models, input.runId);
      if (!record || record.created_at.getTime() !== input.createdAt) return { delivered: false, reason: 'the run was deleted' };
      if (!isTerminal(record.status)) return { delivered: false, reason: 'the run is not closed' };
      const task = await findWebhookTask(models, record.task_id);
      if (!task?.webhook) return { delivered: false, reason: 'the task has no webhook' };
      const run = await renderRun(record);
      if (!run) return { delivered: false, reason: 'the run was deleted' };

      const body = JSON.stringify({ type: 'run.closed', task: `${task.owner}/${task.profile}/${task.name}`, run });
      const id = webhookMessageId(input.runId, input.createdAt);
      const at = new Date();
      let secret: string;
      try {
        secret = open(deps.keyring, task.webhook.secret);
      } catch (err) {
        // Sealed under a key this process does not have (rotate-key not run, or MASTER_KEY changed): retrying cannot help.
        throw ApplicationFailure.nonRetryable(`the webhook's secret cannot be opened: ${(err as Error).message}`, WEBHOOK_FAILURE.refused);
      }
      const signature = new Webhook(secret).sign(id, at, body);
      const headers = {
        'content-type': 'application/json',
        'user-agent': 'prompt-task-runner-webhooks',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': signature,
      };
      const sent = await post(task.webhook.url, headers, body);
      const outcome: DeliveryAttempt = { run: record.name, attempt, status: sent.status, ...(sent.error ? { error: sent.error } : {}), at };
      // The origin only: a receiver's path or query may carry a token of its own.
      const where = { run: input.runId, attempt, status: sent.status, destination: new URL(task.webhook.url).origin };
      const delivered = typeof sent.status === 'number' && sent.status >= 200 && sent.status < 300;
      try {
        await recordDeliveryAttempt(models, task._id, `${id}#${attempt}`, outcome);
      } catch (err) {
        // Delivered is delivered: failing now would POST it again. Only its line in the deliveries list is lost.
        if (!delivered) throw err;
        logger.warn({ ...where, err }, 'webhook delivered, but its attempt could not be listed');
      }
      if (delivered) {
        logger.info(where, 'webhook delivered');
        return { delivered: true, status: sent.status as number };
      }
      logger.warn({ ...where, error: sent.error }, 'webhook delivery attempt failed');
      if (sent.status === 'refused') throw ApplicationFailure.nonRetryable(sent.error!, WEBHOOK_FAILURE.refused);
      throw ApplicationFailure.retryable(sent.error!, WEBHOOK_FAILURE.failed);
    },
  };

  /** One POST, no redirects followed (a 3xx is a failure). Never throws. */
  async function post(url: string, headers: Record<string, string>, body: string): Promise<Pick<DeliveryAttempt, 'status' | 'error'>> {
    // `reset`: no kept-alive connection (deliveries are rare per destination, and nothing is left to close).
    const answer = await guardedRequest(new URL(url), { method: 'POST', headers, body, reset: true, signal: AbortSignal.timeout(attemptTimeoutMs) }, { policy, dispatcher });
    if ('refused' in answer) return { status: 'refused', error: refusedDestinationMessage(answer.refused) };
    if ('failed' in answer) return { status: 'failed', error: answer.timeout ? `no answer within ${attemptTimeoutMs / 1000} s` : `the request failed: ${answer.failed}` };
    const res = answer.response;
    const snippet = await readSnippet(res.body);
    if (res.statusCode >= 200 && res.statusCode < 300) return { status: res.statusCode };
    return { status: res.statusCode, error: `the receiver answered ${res.statusCode}${snippet ? `: ${snippet}` : ''}` };
  }
}

/**
 * The servlets' built-in blocklist and NETWORK_BLOCKLIST, with WEBHOOK_ALLOWLIST (not NETWORK_ALLOWLIST) opening
 * holes in the built-in one. Throws an Error listing every entry it cannot read.
 */
export function webhookPolicy(config: Pick<ActivityDeps['config'], 'NETWORK_BLOCKLIST' | 'WEBHOOK_ALLOWLIST'>): NetworkPolicy {
  try {
    return parseNetworkPolicy({ blocklist: config.NETWORK_BLOCKLIST, allowlist: config.WEBHOOK_ALLOWLIST });
  } catch (err) {
    throw new Error((err as Error).message.replace(/NETWORK_ALLOWLIST/g, 'WEBHOOK_ALLOWLIST'));
  }
}

/** The first characters of an answer's body (at most ANSWER_READ_BYTES are read; the rest is dropped). */
async function readSnippet(body: Dispatcher.ResponseData['body']): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      chunks.push(chunk as Buffer);
      size += (chunk as Buffer).length;
      if (size >= ANSWER_READ_BYTES) break;
    }
  } catch {
    // an answer cut short still has its status
  } finally {
    body.destroy();
  }
  const text = Buffer.concat(chunks).toString('utf8').replace(/\s+/g, ' ').trim();
  return text.length > ANSWER_SNIPPET_CHARS ? `${text.slice(0, ANSWER_SNIPPET_CHARS)}…` : text;
}

export type WebhookActivities = ReturnType<typeof createWebhookDeliveryActivities>;
