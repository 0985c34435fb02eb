import Anthropic from '@anthropic-ai/sdk';
import type { ToolCall } from '../../src/contract/types';
import { groupToolResults, tokens, type ProviderAnswer, type ProviderCall } from './call';
import { malformed, providerFailure } from './errors';
import { rememberPlain, streamsTo, watchedFetch } from './stream-fallback';

type Message = Anthropic.MessageParam;

/** Anthropic messages with tool use. Throws an ApplicationFailure (see errors.ts). */
export async function callAnthropic(call: ProviderCall & { maxTokens: number }): Promise<ProviderAnswer> {
  const params: Anthropic.MessageCreateParamsNonStreaming = {
    model: call.model,
    max_tokens: call.maxTokens,
    messages: groupToolResults(call.conversation).map(toMessage),
    ...(call.system ? { system: call.system } : {}),
    ...(call.temperature !== undefined ? { temperature: call.temperature } : {}),
    ...(call.tools.length
      ? { tools: call.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema as Anthropic.Tool.InputSchema })) }
      : {}),
  };
  let message: Anthropic.Message;
  try {
    message = call.onText && streamsTo(call.baseURL) ? await streamed(call, params, call.onText) : await client(call, call.fetch).messages.create(params, { signal: call.signal });
  } catch (err) {
    throw providerFailure('anthropic', err, call.key);
  }
  if (!message || !Array.isArray(message.content)) throw malformed('anthropic', 'no content array');
  const texts: string[] = [];
  const toolCalls: ToolCall[] = [];
  for (const block of message.content) {
    if (block.type === 'text') texts.push(block.text);
    else if (block.type === 'tool_use') {
      if (!block.name || !block.id) throw malformed('anthropic', 'a tool_use block without id or name');
      const input = block.input && typeof block.input === 'object' ? (block.input as Record<string, unknown>) : {};
      toolCalls.push({ id: block.id, name: block.name, arguments: input });
    }
  }
  // Anthropic counts prompt-cache reads and writes apart from `input_tokens`: all of them are input.
  const u = message.usage;
  const input = tokens(u?.input_tokens) + tokens(u?.cache_creation_input_tokens) + tokens(u?.cache_read_input_tokens);
  const stopReason = typeof message.stop_reason === 'string' ? { stopReason: message.stop_reason } : {};
  const model = typeof message.model === 'string' && message.model ? { model: message.model } : {};
  return { text: texts.join(''), toolCalls, usage: { input, output: tokens(u?.output_tokens) }, ...stopReason, ...model };
}

const client = (call: ProviderCall, fetch: ProviderCall['fetch']) =>
  new Anthropic({ apiKey: call.key, baseURL: call.baseURL, maxRetries: 0, timeout: call.timeoutMs, fetch });

/**
 * The message, streamed (usage: input from message_start, output from message_delta). An endpoint that answered with
 * plain JSON gave its message whole: that is the answer (a body that is not JSON is malformed), and a message
 * remembers it as plain.
 */
async function streamed(call: ProviderCall, params: Anthropic.MessageCreateParamsNonStreaming, onText: (textSoFar: string) => void): Promise<Anthropic.Message> {
  const watched = watchedFetch(call.fetch);
  try {
    const stream = client(call, watched.fetch).messages.stream(params, { signal: call.signal });
    stream.on('text', (_delta, snapshot) => onText(snapshot));
    return await stream.finalMessage();
  } catch (err) {
    const body = watched.plainBody();
    if (!body) throw err;
    const message = JSON.parse(await body) as Anthropic.Message;
    if (Array.isArray(message?.content)) rememberPlain(call.baseURL);
    return message;
  }
}

function toMessage(turn: ReturnType<typeof groupToolResults>[number]): Message {
  if (Array.isArray(turn)) {
    return {
      role: 'user',
      content: turn.map(({ call, result }) => ({
        type: 'tool_result' as const,
        tool_use_id: call.id,
        is_error: Boolean(result.isError),
        content: result.content.map((c) =>
          c.type === 'text'
            ? { type: 'text' as const, text: c.text }
            : { type: 'image' as const, source: { type: 'base64' as const, media_type: c.mimeType as 'image/png', data: c.data } },
        ),
      })),
    };
  }
  if (turn.role === 'user') {
    if (!turn.images?.length) return { role: 'user', content: turn.text };
    const images = turn.images.map((c) => ({ type: 'image' as const, source: { type: 'base64' as const, media_type: c.mimeType as 'image/png', data: c.data } }));
    return { role: 'user', content: [...(turn.text ? [{ type: 'text' as const, text: turn.text }] : []), ...images] };
  }
  return {
    role: 'assistant',
    content: [
      ...(turn.text ? [{ type: 'text' as const, text: turn.text }] : []),
      ...turn.toolCalls.map((c) => ({ type: 'tool_use' as const, id: c.id, name: c.name, input: c.arguments })),
    ],
  };
}
