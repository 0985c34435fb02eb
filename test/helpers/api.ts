import crypto from 'node:crypto';
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../src/http/app';
import { answerClientErrors } from '../../src/http/client-errors';
import { createSession } from '../../src/store/sessions';
import { atTeardown, getStack, type RunningWorker } from './stack';

/** A fresh user name per test, so tests never see each other's data in the shared database. */
export const uniqueUser = (prefix = 'u') => `${prefix}-${crypto.randomBytes(5).toString('hex')}`;

/** Creates the user (with its default profile) and a session the way the CLI does; returns the session id. */
export async function sessionFor(username: string, options: { ttlHours?: number; now?: Date } = {}): Promise<string> {
  const { db, config } = getStack();
  const { id } = await createSession(db.models, username, options.ttlHours ?? config.SESSION_TTL_HOURS, options.now);
  return id;
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed JSON body, or undefined when there is none. */
  body: any;
}

export interface RequestOptions {
  headers?: Record<string, string>;
  /** Sent as is (no JSON encoding, no content type added): text, or bytes such as a module. */
  raw?: string | Uint8Array;
}

/** The answer as tests read it: status, headers, text, and the parsed JSON body (undefined when there is none). */
export async function readResponse(res: Response): Promise<ApiResponse> {
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: res.status, headers: res.headers, text, body };
}

/**
 * fetch wrappers that send `Cookie: sessionId=<id>` (none when `sessionId` is undefined) and parse the answer;
 * `send` makes the request (the fault suite counts every one).
 */
export function api(sessionId: string | undefined, baseUrl = getStack().apiUrl, send: (url: string, init: RequestInit) => Promise<ApiResponse> = async (url, init) => readResponse(await fetch(url, init))) {
  const request = async (method: string, path: string, body?: unknown, options: RequestOptions = {}): Promise<ApiResponse> => {
    const headers: Record<string, string> = { ...options.headers };
    if (sessionId !== undefined) headers.cookie = `sessionId=${sessionId}`;
    let payload: string | Uint8Array | undefined = options.raw;
    if (payload === undefined && body !== undefined) {
      payload = JSON.stringify(body);
      headers['content-type'] ??= 'application/json';
    }
    return send(`${baseUrl}${path}`, { method, headers, body: payload as RequestInit['body'] });
  };
  return {
    request,
    get: (path: string, options?: RequestOptions) => request('GET', path, undefined, options),
    put: (path: string, body?: unknown, options?: RequestOptions) => request('PUT', path, body, options),
    post: (path: string, body?: unknown, options?: RequestOptions) => request('POST', path, body, options),
    delete: (path: string, options?: RequestOptions) => request('DELETE', path, undefined, options),
  };
}

export type Api = ReturnType<typeof api>;

/** A user with a session, and a client for it. */
export async function signedIn(prefix = 'u') {
  const username = uniqueUser(prefix);
  const sessionId = await sessionFor(username);
  return { username, sessionId, api: api(sessionId) };
}

/**
 * A second API process on the same stack with configuration overrides (an operator key, another session cache):
 * the same createApp, database and Temporal client as the stack's own API. Closed with the stack if a test does not.
 */
export async function startApi(overrides: Record<string, string>): Promise<{ url: string; close(): Promise<void> }> {
  const stack = getStack();
  // Listen first, so the API's PUBLIC_URL (which the URLs it answers are built from) is its own address.
  const server: Server = await new Promise((resolve) => {
    const s = http.createServer().listen(0, '127.0.0.1', () => resolve(s));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const config = stack.configWith({ PUBLIC_URL: url, ...overrides });
  const app = createApp({ config, logger: stack.logger, db: stack.db, keyring: stack.keyring, temporal: stack.temporal });
  server.on('request', app.callback());
  answerClientErrors(server);
  let closing: Promise<unknown> | undefined;
  const close = () => {
    server.closeAllConnections();
    return (closing ??= new Promise((r) => server.close(r)));
  };
  atTeardown(close);
  return { url, close: async () => void (await close()) };
}

/**
 * The mocha hooks of a describe whose runs need a worker and an API of their own, started with `settings` (loopback
 * MCP servers allowed, a task queue of its own...) before its tests and stopped after them, the fake provider reset
 * around each test. Call it in the describe's body; `url` is the API's address once the tests run.
 */
export function useOwnWorkerAndApi(settings: Record<string, string>): { readonly url: string; readonly worker: RunningWorker } {
  let worker: RunningWorker | undefined;
  let server: { url: string; close(): Promise<void> } | undefined;
  before(async () => {
    worker = await getStack().startWorker(settings);
    server = await startApi(settings);
  });
  after(async () => {
    await server?.close();
    await worker?.stop();
  });
  beforeEach(() => getStack().fake.reset());
  afterEach(() => getStack().fake.reset());
  return {
    get url() {
      if (!server) throw new Error('the API of this describe has not started (its before hook failed or has not run)');
      return server.url;
    },
    get worker() {
      if (!worker) throw new Error('the worker of this describe has not started (its before hook failed or has not run)');
      return worker;
    },
  };
}

/** The contract body for a task; `key` undefined leaves settings out. */
export function taskBody(runner: 'openai' | 'anthropic', prompt: string, model: string, key?: string) {
  return { runner, [runner]: { prompt, model }, ...(key === undefined ? {} : { settings: { key } }) };
}
