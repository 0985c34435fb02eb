import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { streamEvents } from './fake-stream';

/**
 * A local stand-in for the outside world's model providers: speaks OpenAI chat completions
 * (`POST /v1/chat/completions`) and Anthropic messages (`POST /v1/messages`), records every request, and answers
 * from a per-test script. The default answer echoes the last user message: `echo: <text>`.
 */
export type Provider = 'openai' | 'anthropic';

export interface RecordedRequest {
  provider: Provider;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
  at: number;
  /** The client's port: the same port on two requests means one kept-alive connection. */
  remotePort: number;
  /** When the client closed the connection before an answer was sent (an aborted call). */
  abortedAt?: number;
}

/** Token counts a reply reports (`usage`): input (prompt) and output (completion) tokens. */
export interface FakeUsage {
  input: number;
  output: number;
}

export interface FakeReply {
  status?: number;
  body?: unknown;
  /** Raw response text (for malformed answers). */
  raw?: string;
  delayMs?: number;
  /** Never answer (until the test resets the fake). */
  hang?: boolean;
  headers?: Record<string, string>;
  /**
   * Closes the connection instead of answering: `before-answer` sends nothing, `mid-answer` sends the status, the
   * headers and half the body first (a provider that drops the connection).
   */
  close?: 'before-answer' | 'mid-answer';
  /** A streaming request's answer text in these pieces (default: one), `chunkDelayMs` apart. */
  chunks?: string[];
  chunkDelayMs?: number;
  /** Answers a streaming request with the plain JSON completion (an endpoint that does not stream). */
  noStream?: boolean;
  /** Cuts the connection after this many events of a streamed answer. */
  cutAfterChunks?: number;
}

export type Responder = (req: RecordedRequest) => FakeReply | Promise<FakeReply>;

export interface FakeProvider {
  url: string;
  openaiBaseUrl: string;
  anthropicBaseUrl: string;
  requests: RecordedRequest[];
  /** Replies in order, then the default; or a function for every request. */
  script(replies: Array<FakeReply | Responder> | Responder): void;
  reset(): void;
  close(): Promise<void>;
}

export function lastUserText(req: RecordedRequest): string {
  const messages = (req.body?.messages ?? []) as Array<{ role: string; content: unknown }>;
  const last = [...messages].reverse().find((m) => m.role === 'user');
  if (!last) return '';
  if (typeof last.content === 'string') return last.content;
  return (last.content as Array<{ type: string; text?: string; content?: unknown }>)
    .map((c) => (c.type === 'text' ? c.text : c.type === 'tool_result' ? JSON.stringify(c.content) : ''))
    .join('');
}

export const openaiText = (text: string, usage: FakeUsage = { input: 1, output: 1 }): FakeReply => ({
  body: {
    id: `chatcmpl-${Math.random().toString(36).slice(2)}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: 'fake',
    choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: text, refusal: null } }],
    usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output },
  },
});

export const openaiToolCall = (calls: Array<{ id?: string; name: string; arguments: unknown }>, usage?: FakeUsage): FakeReply => ({
  body: {
    id: `chatcmpl-${Math.random().toString(36).slice(2)}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: 'fake',
    choices: [
      {
        index: 0,
        finish_reason: 'tool_calls',
        message: {
          role: 'assistant',
          content: null,
          tool_calls: calls.map((c, i) => ({
            id: c.id ?? `call_${i}`,
            type: 'function',
            function: { name: c.name, arguments: JSON.stringify(c.arguments) },
          })),
        },
      },
    ],
    ...(usage ? { usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output } } : {}),
  },
});

export const anthropicText = (text: string, usage: FakeUsage = { input: 1, output: 1 }): FakeReply => ({
  body: {
    id: `msg_${Math.random().toString(36).slice(2)}`,
    type: 'message',
    role: 'assistant',
    model: 'fake',
    content: [{ type: 'text', text }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: usage.input, output_tokens: usage.output },
  },
});

export const anthropicToolUse = (calls: Array<{ id?: string; name: string; input: unknown }>, text?: string, usage: FakeUsage = { input: 1, output: 1 }): FakeReply => ({
  body: {
    id: `msg_${Math.random().toString(36).slice(2)}`,
    type: 'message',
    role: 'assistant',
    model: 'fake',
    content: [
      ...(text ? [{ type: 'text', text }] : []),
      ...calls.map((c, i) => ({ type: 'tool_use', id: c.id ?? `toolu_${i}`, name: c.name, input: c.input })),
    ],
    stop_reason: 'tool_use',
    stop_sequence: null,
    usage: { input_tokens: usage.input, output_tokens: usage.output },
  },
});

/** An error answer in the provider's own error shape. */
export const providerError = (provider: Provider, status: number, message: string): FakeReply => ({
  status,
  body:
    provider === 'openai'
      ? { error: { message, type: 'invalid_request_error', code: null } }
      : { type: 'error', error: { type: status === 401 ? 'authentication_error' : 'api_error', message } },
});

const echo: Responder = (req) => {
  const text = `echo: ${lastUserText(req)}`;
  return req.provider === 'openai' ? openaiText(text) : anthropicText(text);
};

export async function startFakeProvider(): Promise<FakeProvider> {
  let queue: Array<FakeReply | Responder> = [];
  let fallback: Responder = echo;
  const hanging = new Set<http.ServerResponse>();
  const requests: RecordedRequest[] = [];

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const path = (req.url ?? '').split('?')[0]!;
        const provider: Provider | undefined = path.endsWith('/chat/completions')
          ? 'openai'
          : path.endsWith('/messages')
            ? 'anthropic'
            : undefined;
        if (!provider || req.method !== 'POST') {
          res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
          return;
        }
        let body: unknown;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          body = undefined;
        }
        const recorded: RecordedRequest = { provider, path, headers: req.headers, body, at: Date.now(), remotePort: req.socket.remotePort ?? 0 };
        requests.push(recorded);
        res.once('close', () => {
          if (!res.writableFinished) recorded.abortedAt = Date.now();
        });
        const next = queue.shift() ?? fallback;
        const reply = typeof next === 'function' ? await next(recorded) : next;
        if (reply.hang) {
          hanging.add(res);
          return;
        }
        if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
        if (reply.close) {
          if (reply.close === 'mid-answer') {
            const text = reply.raw ?? JSON.stringify(reply.body ?? {});
            res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...reply.headers });
            res.write(text.slice(0, Math.floor(text.length / 2)));
          }
          // After the written half has gone out (end() of the socket flushes it), so the client sees a cut answer.
          res.socket?.end(() => res.socket?.destroy());
          return;
        }
        const b = body as { stream?: unknown; stream_options?: { include_usage?: unknown } } | undefined;
        // A body that is no answer (a test's malformed one) cannot be streamed: it goes as plain JSON, as from an
        // endpoint that does not stream.
        let events: string[] | undefined;
        if (b?.stream === true && !reply.noStream && reply.raw === undefined && (reply.status ?? 200) < 300) {
          try {
            events = streamEvents(provider, reply.body, reply.chunks, b.stream_options?.include_usage === true);
          } catch {
            events = undefined;
          }
        }
        if (events) {
          res.writeHead(reply.status ?? 200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...reply.headers });
          for (const [i, e] of events.entries()) {
            if (reply.cutAfterChunks !== undefined && i >= reply.cutAfterChunks) {
              res.socket?.end(() => res.socket?.destroy());
              return;
            }
            res.write(e);
            if (reply.chunkDelayMs && i < events.length - 1) await new Promise((r) => setTimeout(r, reply.chunkDelayMs));
          }
          res.end();
          return;
        }
        res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers });
        res.end(reply.raw ?? JSON.stringify(reply.body ?? {}));
      })().catch((err: Error) => {
        res.writeHead(500).end(String(err.message));
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    openaiBaseUrl: `${url}/v1`,
    anthropicBaseUrl: url,
    requests,
    script(replies) {
      if (typeof replies === 'function') {
        queue = [];
        fallback = replies;
      } else {
        queue = [...replies];
      }
    },
    reset() {
      queue = [];
      fallback = echo;
      requests.length = 0;
      for (const res of hanging) res.destroy();
      hanging.clear();
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
