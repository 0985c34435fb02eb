import OpenAI from 'openai';
import type { ToolCall } from '../../src/contract/types';
import { groupToolResults, tokens, type ProviderAnswer, type ProviderCall, type ToolTurn } from './call';
import { malformed, providerFailure } from './errors';
import { rememberPlain, streamsTo, watchedFetch } from './stream-fallback';

type Message = OpenAI.Chat.Completions.ChatCompletionMessageParam;

/** OpenAI chat completions with function tools. Throws an ApplicationFailure (see errors.ts). */
export async function callOpenAI(call: ProviderCall): Promise<ProviderAnswer> {
  const params: OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming = {
    model: call.model,
    messages: [...(call.system ? [{ role: 'system' as const, content: call.system }] : []), ...groupToolResults(call.conversation).flatMap(toMessages)],
    ...(call.maxTokens ? { max_completion_tokens: call.maxTokens } : {}),
    ...(call.temperature !== undefined ? { temperature: call.temperature } : {}),
    ...(call.tools.length
      ? { tools: call.tools.map((t) => ({ type: 'function' as const, function: { name: t.name, description: t.description, parameters: t.inputSchema } })) }
      : {}),
  };
  let completion: OpenAI.Chat.Completions.ChatCompletion;
  try {
    completion = call.onText && streamsTo(call.baseURL) ? await streamed(call, params, call.onText) : await client(call, call.fetch).chat.completions.create(params, { signal: call.signal });
  } catch (err) {
    throw providerFailure('openai', err, call.key);
  }
  const choice = completion?.choices?.[0];
  const message = choice?.message;
  if (!message || typeof message !== 'object') throw malformed('openai', 'no choices[0].message');
  const toolCalls: ToolCall[] = [];
  for (const tc of message.tool_calls ?? []) {
    if (tc.type !== 'function' || !tc.function?.name) throw malformed('openai', 'a tool call without a function name');
    toolCalls.push({ id: tc.id, name: tc.function.name, arguments: parseArguments(tc.function.arguments) });
  }
  if (typeof message.content !== 'string' && toolCalls.length === 0) throw malformed('openai', 'neither content nor tool calls');
  const usage = { input: tokens(completion.usage?.prompt_tokens), output: tokens(completion.usage?.completion_tokens) };
  return {
    text: message.content ?? '',
    toolCalls,
    usage,
    ...(typeof choice?.finish_reason === 'string' ? { stopReason: choice.finish_reason } : {}),
    ...(typeof completion.model === 'string' && completion.model ? { model: completion.model } : {}),
  };
}

const client = (call: ProviderCall, fetch: ProviderCall['fetch']) =>
  new OpenAI({ apiKey: call.key, baseURL: call.baseURL, maxRetries: 0, timeout: call.timeoutMs, fetch });

/**
 * The completion, streamed (usage asked for in the last chunk). An endpoint that answered with plain JSON gave its
 * completion whole: that is the answer (a body that is not JSON is malformed), and a completion remembers it as plain.
 */
async function streamed(
  call: ProviderCall,
  params: OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming,
  onText: (textSoFar: string) => void,
): Promise<OpenAI.Chat.Completions.ChatCompletion> {
  const watched = watchedFetch(call.fetch);
  try {
    const stream = client(call, watched.fetch).chat.completions.stream({ ...params, stream: true, stream_options: { include_usage: true } }, { signal: call.signal });
    stream.on('content', (_delta, snapshot) => onText(snapshot));
    return await stream.finalChatCompletion();
  } catch (err) {
    const body = watched.plainBody();
    if (!body) throw err;
    const completion = JSON.parse(await body) as OpenAI.Chat.Completions.ChatCompletion;
    if (completion?.choices?.[0]?.message) rememberPlain(call.baseURL);
    return completion;
  }
}

function parseArguments(raw: string | undefined): Record<string, unknown> {
  try {
    const value = JSON.parse(raw || '{}');
    return value && typeof value === 'object' && !Array.isArray(value) ? value : { value };
  } catch {
    return { invalid_json_arguments: raw };
  }
}

function toMessages(turn: ReturnType<typeof groupToolResults>[number]): Message[] {
  if (Array.isArray(turn)) return toolMessages(turn);
  if (turn.role === 'user') {
    if (!turn.images?.length) return [{ role: 'user', content: turn.text }];
    const images = turn.images.map((c) => ({ type: 'image_url' as const, image_url: { url: `data:${c.mimeType};base64,${c.data}` } }));
    return [{ role: 'user', content: [...(turn.text ? [{ type: 'text' as const, text: turn.text }] : []), ...images] }];
  }
  return [
    {
      role: 'assistant',
      content: turn.text || null,
      ...(turn.toolCalls.length
        ? { tool_calls: turn.toolCalls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: JSON.stringify(c.arguments) } })) }
        : {}),
    },
  ];
}

/** Tool messages carry text only; images a tool returned follow as a user message, which accepts image parts. */
function toolMessages(results: ToolTurn[]): Message[] {
  const messages: Message[] = results.map(({ call, result }) => ({
    role: 'tool' as const,
    tool_call_id: call.id,
    content:
      (result.isError ? 'ERROR: ' : '') +
      (result.content.map((c) => (c.type === 'text' ? c.text : `[image ${c.mimeType}, ${base64Bytes(c.data)} bytes, attached below]`)).join('\n') || '(no content)'),
  }));
  const images = results.flatMap(({ call, result }) => result.content.flatMap((c) => (c.type === 'image' ? [{ call, c }] : [])));
  if (images.length) {
    messages.push({
      role: 'user',
      content: images.flatMap(({ call, c }) => [
        { type: 'text' as const, text: `Image returned by tool ${call.name}:` },
        { type: 'image_url' as const, image_url: { url: `data:${c.mimeType};base64,${c.data}` } },
      ]),
    });
  }
  return messages;
}

/** How many bytes a base64 text decodes to. */
export const base64Bytes = (base64: string) => Math.floor((base64.length * 3) / 4) - (base64.endsWith('==') ? 2 : base64.endsWith('=') ? 1 : 0);
