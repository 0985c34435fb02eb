import Anthropic from '@anthropic-ai/sdk';
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import OpenAI from 'openai';
import { runFailure } from '../../src/contract/failures';
import type { ProviderFailureDetails } from '../../src/contract/types';

/** Removes the key, and anything that looks like a provider key, from a provider's message before it is recorded. */
export function scrub(message: string, key: string): string {
  let out = key ? message.split(key).join('[redacted]') : message;
  if (key.length >= 16) {
    for (let i = 0; i + 12 <= key.length; i += 4) out = out.split(key.slice(i, i + 12)).join('[redacted]');
  }
  return out.replace(/\b(sk|key|api)[-_][A-Za-z0-9*_.-]{6,}/gi, '[redacted]');
}

/**
 * Maps an SDK error to a Temporal failure: 408/409/429/5xx and network errors are retryable (the workflow waits
 * and tries again), every other answer fails the run at once with the provider's message.
 */
export function providerFailure(provider: string, err: unknown, key: string): ApplicationFailure {
  const e = err as { status?: number; message?: string; name?: string; headers?: Headers | Record<string, string>; error?: unknown };
  const message = scrub(e.message ?? String(err), key);
  // A 2xx answer whose body is not JSON: retrying would get the same.
  if (err instanceof SyntaxError) return malformed(provider, `the body is not JSON (${message})`);
  if (typeof e.status === 'number') {
    const status = e.status;
    const retryable = status === 408 || status === 409 || status === 429 || status >= 500;
    const details: ProviderFailureDetails = { status, retryAfterMs: retryAfter(e.headers) };
    const text = `${provider} answered ${status}: ${message.replace(/^\d{3}\s*/, '')}`;
    return runFailure(retryable ? 'ProviderUnavailable' : 'ProviderRejected', text, details);
  }
  if (aborted(err)) return abortedCall(provider);
  return runFailure('ProviderUnreachable', `${provider} could not be reached: ${message}`);
}

/**
 * A call we aborted (the run was cancelled, or its worker stops): the SDKs' own abort errors, or fetch's. Not a
 * provider failure, so benign: the SDK logs it at debug, where a provider that cannot be reached is a warning.
 */
const aborted = (err: unknown) =>
  err instanceof OpenAI.APIUserAbortError || err instanceof Anthropic.APIUserAbortError || /abort/i.test((err as { name?: string })?.name ?? '');

const abortedCall = (provider: string) =>
  ApplicationFailure.create({ type: 'ProviderUnavailable', message: `${provider} call aborted`, category: ApplicationFailureCategory.BENIGN });

export const malformed = (provider: string, what: string) => runFailure('ProviderMalformedAnswer', `${provider} sent a malformed answer: ${what}`);

function retryAfter(headers: Headers | Record<string, string> | undefined): number | undefined {
  // Any Headers (the providers' fetch is undici's, whose class is not the global one), or a plain record.
  const value = typeof (headers as Headers | undefined)?.get === 'function' ? (headers as Headers).get('retry-after') : (headers as Record<string, string> | undefined)?.['retry-after'];
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : undefined;
}
