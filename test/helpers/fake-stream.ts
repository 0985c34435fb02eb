/**
 * A scripted answer as the providers stream it: OpenAI chat.completion.chunk events ending `data: [DONE]`, or
 * Anthropic's message_start … message_stop. The answer's text goes out in `chunks` (default: one), tool calls and
 * their arguments after it.
 */
export function streamEvents(provider: 'openai' | 'anthropic', body: any, chunks: string[] | undefined, includeUsage: boolean): string[] {
  return provider === 'openai' ? openaiEvents(body, chunks, includeUsage) : anthropicEvents(body, chunks);
}

const data = (value: unknown) => `data: ${JSON.stringify(value)}\n\n`;
const event = (type: string, value: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...value })}\n\n`;

function textChunks(text: string | null | undefined, chunks: string[] | undefined): string[] {
  if (chunks) return chunks;
  return text ? [text] : [];
}

function openaiEvents(body: any, chunks: string[] | undefined, includeUsage: boolean): string[] {
  const choice = body.choices[0];
  const base = { id: body.id, object: 'chat.completion.chunk', created: body.created, model: body.model };
  const chunk = (delta: object, finish: string | null = null) => data({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] });
  const out = [chunk({ role: 'assistant', content: '' })];
  for (const piece of textChunks(choice.message.content, chunks)) out.push(chunk({ content: piece }));
  (choice.message.tool_calls ?? []).forEach((tc: any, index: number) => {
    out.push(chunk({ tool_calls: [{ index, id: tc.id, type: 'function', function: { name: tc.function.name, arguments: '' } }] }));
    const args: string = tc.function.arguments;
    const half = Math.floor(args.length / 2);
    for (const part of [args.slice(0, half), args.slice(half)]) out.push(chunk({ tool_calls: [{ index, function: { arguments: part } }] }));
  });
  out.push(chunk({}, choice.finish_reason));
  if (includeUsage && body.usage) out.push(data({ ...base, choices: [], usage: body.usage }));
  out.push('data: [DONE]\n\n');
  return out;
}

function anthropicEvents(body: any, chunks: string[] | undefined): string[] {
  const out = [
    event('message_start', {
      // Input tokens, prompt-cache ones among them, come with message_start; output with message_delta.
      message: { ...body, content: [], stop_reason: null, usage: { ...body.usage, output_tokens: 0 } },
    }),
  ];
  (body.content as any[]).forEach((block, index) => {
    if (block.type === 'text') {
      out.push(event('content_block_start', { index, content_block: { type: 'text', text: '' } }));
      for (const piece of textChunks(block.text, chunks)) out.push(event('content_block_delta', { index, delta: { type: 'text_delta', text: piece } }));
    } else {
      out.push(event('content_block_start', { index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } }));
      const json = JSON.stringify(block.input);
      const half = Math.floor(json.length / 2);
      for (const part of [json.slice(0, half), json.slice(half)]) out.push(event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: part } }));
    }
    out.push(event('content_block_stop', { index }));
  });
  out.push(event('message_delta', { delta: { stop_reason: body.stop_reason, stop_sequence: null }, usage: { output_tokens: body.usage.output_tokens } }));
  out.push(event('message_stop', {}));
  return out;
}
