import { SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';

/**
 * Spans of a run's model and tool calls, by the OpenTelemetry GenAI semantic conventions (their attributes are still
 * "development" there, so they are spelled here rather than taken from the incubating entry point). Through
 * @opentelemetry/api only: with no tracer provider registered (tracing off) every span is a no-op.
 *
 * Never a prompt, answer, tool argument or result, key or install secret in an attribute: content only as events,
 * only when `capture` (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT) is on, and each cut to CONTENT_MAX_CHARS.
 */
const tracer = () => trace.getTracer('prompt-task-runner');

/** The most characters of one captured content (a prompt, an answer, a tool's arguments or result). */
export const CONTENT_MAX_CHARS = 8 * 1024;

const bounded = (text: string) => (text.length <= CONTENT_MAX_CHARS ? text : `${text.slice(0, CONTENT_MAX_CHARS)}…[${text.length - CONTENT_MAX_CHARS} more characters]`);

/** What a span's `error.type` says of a failure: the ApplicationFailure's type, else the error's class name. */
function errorType(err: unknown): string {
  const type = (err as { type?: unknown })?.type;
  if (typeof type === 'string' && type) return type;
  return err instanceof Error ? err.name : 'unknown';
}

async function inSpan<T>(name: string, kind: SpanKind, attributes: Attributes, work: (span: Span) => Promise<T>): Promise<T> {
  return tracer().startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await work(span);
    } catch (err) {
      span.setAttribute('error.type', errorType(err));
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw err;
    } finally {
      span.end();
    }
  });
}

export interface ChatCall {
  system: 'openai' | 'anthropic';
  model: string;
  maxTokens?: number | null;
  capture: boolean;
  /** The request as the provider gets it (its messages), read only when `capture`. */
  prompt: () => unknown;
}

export interface ChatAnswer {
  text: string;
  toolCalls: Array<{ id: string; name: string; arguments: unknown }>;
  usage: { input: number; output: number };
  stopReason?: string;
  model?: string;
}

/** `chat <model>`: one provider call (SpanKind.CLIENT), its tokens and finish reason, the error's type if it fails. */
export function traceChat<T extends ChatAnswer>(call: ChatCall, work: () => Promise<T>): Promise<T> {
  const attributes: Attributes = {
    'gen_ai.system': call.system,
    'gen_ai.operation.name': 'chat',
    'gen_ai.request.model': call.model,
    ...(call.maxTokens ? { 'gen_ai.request.max_tokens': call.maxTokens } : {}),
  };
  return inSpan(`chat ${call.model}`, SpanKind.CLIENT, attributes, async (span) => {
    const capture = call.capture && span.isRecording();
    if (capture) span.addEvent('gen_ai.content.prompt', { 'gen_ai.prompt': bounded(JSON.stringify(call.prompt())) });
    const answer = await work();
    span.setAttributes({
      'gen_ai.response.model': answer.model ?? call.model,
      'gen_ai.usage.input_tokens': answer.usage.input,
      'gen_ai.usage.output_tokens': answer.usage.output,
      ...(answer.stopReason ? { 'gen_ai.response.finish_reasons': [answer.stopReason] } : {}),
    });
    if (capture) {
      const completion = { text: answer.text, tool_calls: answer.toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments })) };
      span.addEvent('gen_ai.content.completion', { 'gen_ai.completion': bounded(JSON.stringify(completion)) });
    }
    return answer;
  });
}

export interface ToolCallTrace {
  /** The tool's name on its servlet or MCP server. */
  tool: string;
  /** The model's id of the call, when the workflow passed it. */
  callId?: string;
  kind: 'servlet' | 'mcp';
  /** The install's name in the profile (never its configuration or its server's URL, which may hold a token). */
  install: string;
  capture: boolean;
  arguments: unknown;
}

/** `execute_tool <name>`: one tool call (servlet or MCP); `error.type` `tool_error` when the tool answered an error. */
export function traceToolCall<T>(call: ToolCallTrace, work: () => Promise<T>, result: (value: T) => { isError?: boolean; content: unknown }): Promise<T> {
  const attributes: Attributes = {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': call.tool,
    ...(call.callId ? { 'gen_ai.tool.call.id': call.callId } : {}),
    'ptr.tool.kind': call.kind,
    'ptr.tool.install': call.install,
  };
  return inSpan(`execute_tool ${call.tool}`, SpanKind.INTERNAL, attributes, async (span) => {
    const capture = call.capture && span.isRecording();
    if (capture) span.addEvent('gen_ai.tool.input', { 'gen_ai.tool.call.arguments': bounded(JSON.stringify(call.arguments)) });
    const value = await work();
    const answer = result(value);
    if (answer.isError) {
      span.setAttribute('error.type', 'tool_error');
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    if (capture) span.addEvent('gen_ai.tool.output', { 'gen_ai.tool.call.result': bounded(JSON.stringify(answer.content)) });
    return value;
  });
}
