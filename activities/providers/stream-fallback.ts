import type { ProviderFetch } from './http';

/**
 * Endpoints (by base URL) that answered a streaming request with a plain JSON completion: for the rest of the
 * process their calls do not stream. Some OpenAI- and Anthropic-compatible servers ignore `stream: true`.
 */
const plainEndpoints = new Set<string>();

export const streamsTo = (baseURL: string | undefined): boolean => !plainEndpoints.has(baseURL ?? '');

/**
 * A fetch that keeps the body of a successful answer that came as plain JSON instead of an event stream. The SDKs'
 * stream readers find no events in such an answer and fail; `plainBody()` then gives the answer's text, which is the
 * call's answer (the model is not asked twice), and `rememberPlain` keeps that endpoint off streaming.
 */
export function watchedFetch(fetch: ProviderFetch): { fetch: ProviderFetch; plainBody(): Promise<string> | undefined } {
  let plain: Promise<string> | undefined;
  const watched = (async (input: Parameters<ProviderFetch>[0], init?: RequestInit) => {
    const response = await fetch(input, init);
    const type = response.headers.get('content-type') ?? '';
    if (response.ok && !type.includes('text/event-stream') && type.includes('json')) {
      plain = response.clone().text();
      // Read only when the stream fails; its own failure (an aborted call) surfaces there.
      plain.catch(() => undefined);
    }
    return response;
  }) as ProviderFetch;
  return { fetch: watched, plainBody: () => plain };
}

export const rememberPlain = (baseURL: string | undefined): void => void plainEndpoints.add(baseURL ?? '');
