import type { Client } from '@temporalio/client';
import { expect } from 'chai';
import type { Api } from './api';
import { getStack } from './stack';

/**
 * Polls a run URL (as a client would) until it is closed; returns the closed run. A 503 (a dependency did not answer in
 * time, as a loaded machine's FerretDB may not: "retry in a moment", with `Retry-After`) is asked again, as the API
 * tells clients to, until the deadline; any other answer but 200 fails.
 */
export async function waitForRun(api: Api, url: string, timeoutMs = 25_000): Promise<any> {
  const path = new URL(url).pathname;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await api.get(path);
    if (res.status === 503 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 1_000 * Number(res.headers.get('retry-after') ?? 1)));
      continue;
    }
    expect(res.status, `${res.text}${res.status >= 500 ? ` (the API logged: ${lastRequestFailure()})` : ''}`).to.equal(200);
    if (res.body.status === 'ready' || res.body.status === 'error') return res.body;
    if (Date.now() > deadline) throw new Error(`run did not close: ${res.text}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The shared stack's last logged request failure (an API answering 5xx logs why), when there is a stack. */
function lastRequestFailure(): string {
  try {
    return getStack().logs.lines.filter((l) => l.includes('request failed')).slice(-1)[0] ?? '(none logged)';
  } catch {
    return '(no stack)';
  }
}

/** Creates a Variant B task (openai unless said otherwise) with its own key. */
export async function createTask(api: Api, profile: string, name: string, options: { prompt?: string; runner?: 'openai' | 'anthropic'; key?: string; model?: string } = {}) {
  const runner = options.runner ?? 'openai';
  const res = await api.put(`/api/tasks/~/${profile}/${name}`, {
    runner,
    [runner]: { prompt: options.prompt ?? 'Say {{ text }}', model: options.model ?? 'test-model' },
    settings: { key: options.key ?? 'sk-test-key-0123456789abcdef' },
  });
  expect(res.status, res.text).to.be.oneOf([200, 201]);
  return res.body;
}

export async function signedUrl(api: Api, profile: string, task: string): Promise<string> {
  const res = await api.post(`/api/tasks/~/${profile}/${task}/signed`);
  expect(res.status, res.text).to.equal(200);
  return res.body.url as string;
}

/** POSTs a signed URL without a session, as a holder of the URL would. */
export async function postSigned(url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const text = await res.text();
  let parsed: any;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

/** A run's workflow history as text, with payloads (base64 in the history) decoded, to search it for secrets. */
export async function historyText(temporal: Client, workflowId: string): Promise<string> {
  const history = await temporal.workflow.getHandle(workflowId).fetchHistory();
  return JSON.stringify(history, (k, v) => (k === 'data' && typeof v === 'string' ? Buffer.from(v, 'base64').toString('utf8') : v));
}

/** Waits until `check` gives a value, polling (for states a test cannot be told about); a test's bound, not a timing assertion. */
export async function until<T>(what: string, check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
