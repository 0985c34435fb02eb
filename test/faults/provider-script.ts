import {
  anthropicText,
  anthropicToolUse,
  lastUserText,
  openaiText,
  openaiToolCall,
  providerError,
  type FakeReply,
  type RecordedRequest,
  type Responder,
} from '../helpers/fake-provider';
import { ledger } from './ledger';

/**
 * How the fake provider answers in the fault suite, told by the run itself: its trigger text is
 * `<mode>[:<arg>] <tag>` (the tasks' prompt is `Say {{ text }}`), where the tag is unique per run. The modes:
 *
 * - `echo`: answers at once; `slow:<ms>`: answers after that long.
 * - `hold:<gate>`: the first call waits until the suite opens the gate (`open(gate)`); later calls answer at once.
 * - `hang-once`: the first call never answers (the worker's PROVIDER_TIMEOUT_MS ends it); later ones answer.
 * - `429-once` / `429-always`: 429 with `retry-after: <arg, default 1>` (once, or on every call).
 * - `close-once`: closes the connection without answering, once; `cut-once`: sends half an answer, then closes.
 * - `garbage`: 200 with a body that is not JSON, every time.
 * - `401-echo`: 401 whose message quotes the key the request was made with (its `authorization` or `x-api-key`), as
 *   real providers do ("Incorrect API key provided: sk-…"), so the run's reason must have it scrubbed.
 * - `tool:<install>__<tool>`: asks for that tool with `{"name": <tag>}`, then answers with what the tool said.
 *
 * Every fault it serves is counted in the ledger. Anthropic requests get Anthropic answers.
 */
export interface ProviderScript {
  responder: Responder;
  open(gate: string): void;
  /** Calls waiting at a gate (a test waits until all of its runs' calls are in flight). */
  waiting(gate: string): number;
  /** Calls made for a tag (every attempt, every turn). */
  calls(tag: string): number;
  /** The key a `401-echo` answer quoted for a tag. */
  echoed(tag: string): string | undefined;
}

const DIRECTIVE = /(\S+) (\S+)\s*$/;

export function providerScript(): ProviderScript {
  const gates = new Map<string, { opened: Promise<void>; open(): void; waiting: number }>();
  const calls = new Map<string, number>();
  const echoed = new Map<string, string>();
  const gate = (name: string) => {
    let g = gates.get(name);
    if (!g) {
      let open!: () => void;
      const opened = new Promise<void>((r) => (open = r));
      g = { opened, open, waiting: 0 };
      gates.set(name, g);
    }
    return g;
  };

  const responder: Responder = async (req: RecordedRequest): Promise<FakeReply> => {
    const match = DIRECTIVE.exec(lastUserText(req));
    const [mode = 'echo', argText] = (match?.[1] ?? 'echo').split(':');
    const tag = match?.[2] ?? 'untagged';
    const attempt = (calls.get(tag) ?? 0) + 1;
    calls.set(tag, attempt);
    const text = (t: string) => (req.provider === 'openai' ? openaiText(t) : anthropicText(t));
    const answer = text(`done ${tag}`);
    const fault = (kind: string, reply: FakeReply) => {
      ledger.fault(`provider ${kind}`);
      return reply;
    };
    switch (mode) {
      case 'slow':
        return { ...answer, delayMs: Number(argText ?? 1000) };
      case 'hold': {
        if (attempt > 1) return answer;
        const g = gate(argText ?? tag);
        g.waiting++;
        await g.opened;
        g.waiting--;
        return answer;
      }
      case 'hang-once':
        return attempt === 1 ? fault('timeout', { hang: true }) : answer;
      case '429-once':
      case '429-always':
        if (mode === '429-once' && attempt > 1) return answer;
        return fault('429', { ...providerError(req.provider, 429, 'rate limited'), headers: { 'retry-after': argText ?? '1' } });
      case 'close-once':
        return attempt === 1 ? fault('connection closed', { close: 'before-answer' }) : answer;
      case 'cut-once':
        return attempt === 1 ? fault('connection cut mid-answer', { ...answer, close: 'mid-answer' }) : answer;
      case 'garbage':
        return fault('garbage', { raw: '<html>502 Bad Gateway</html> not json {' });
      case '401-echo': {
        const key = String(req.headers['x-api-key'] ?? req.headers.authorization ?? '').replace(/^Bearer\s+/i, '');
        echoed.set(tag, key);
        return fault('401 quoting the key', providerError(req.provider, 401, `Incorrect API key provided: ${key}. You can find your API key in your account settings.`));
      }
      case 'tool': {
        const messages = JSON.stringify(req.body?.messages ?? []);
        const toolSaid = req.provider === 'openai' ? (req.body?.messages as any[]).filter((m) => m.role === 'tool').map((m) => m.content) : [];
        if (req.provider === 'openai' ? toolSaid.length > 0 : messages.includes('tool_result')) return text(`tool said: ${toolSaid.join(' | ') || 'something'}`);
        const name = argText ?? 'missing';
        return req.provider === 'openai' ? openaiToolCall([{ name, arguments: { name: tag } }]) : anthropicToolUse([{ name, input: { name: tag } }]);
      }
      default:
        return answer;
    }
  };

  return {
    responder,
    open: (name) => gate(name).open(),
    waiting: (name) => gates.get(name)?.waiting ?? 0,
    calls: (tag) => calls.get(tag) ?? 0,
    echoed: (tag) => echoed.get(tag),
  };
}
