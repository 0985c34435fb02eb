import { Agent, fetch as undiciFetch } from 'undici';

/** What the provider SDKs are given as `fetch`: the global fetch's shape. */
export type ProviderFetch = typeof globalThis.fetch;

/**
 * Provider connections, pooled and kept alive for every call of the worker: a call waits seconds on a model, and
 * thousands run at once, so each must not cost a connection (and a TLS handshake) of its own. The SDKs get a fetch on
 * one undici Agent (the package's own fetch: Node's global fetch bundles another undici, which may not take its
 * agents). Keys travel per request as headers; nothing about a task is kept in the pool.
 */
export function createProviderFetch(): { fetch: ProviderFetch; close(): Promise<void> } {
  const agent = new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000, connections: null });
  const fetch = ((input: Parameters<ProviderFetch>[0], init?: RequestInit) =>
    undiciFetch(input as never, { ...(init as object), dispatcher: agent } as never)) as unknown as ProviderFetch;
  return { fetch, close: () => agent.close() };
}
