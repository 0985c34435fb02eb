import { z } from 'zod';
import type { CallToolResult } from '../../src/contract/types';

/** What a servlet's `describe` must return (spec/compat.md, "Module ABI"). */
const toolSchema = z.object({
  // the intersection of what OpenAI and Anthropic accept as a function name
  name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'expected 1 to 64 letters, digits, "_" or "-"'),
  description: z.string().optional(),
  inputSchema: z.record(z.string(), z.unknown()),
});

const describeSchema = z.object({ tools: z.array(toolSchema) }).superRefine((value, ctx) => {
  const seen = new Set<string>();
  value.tools.forEach((tool, i) => {
    if (seen.has(tool.name)) ctx.addIssue({ code: 'custom', path: ['tools', i, 'name'], message: `"${tool.name}" is used twice` });
    seen.add(tool.name);
  });
});

const contentSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string() }),
  z.object({
    type: z.literal('image'),
    data: z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'expected base64'),
    mimeType: z.string().regex(/^image\/[\w.+-]+$/, 'expected an image/* type'),
  }),
]);

/** A servlet's `call` answer, checked against the contract's CallToolResult (the type is declared there, once). */
const callResultSchema: z.ZodType<CallToolResult> = z.object({ content: z.array(contentSchema), isError: z.boolean().optional() });

export type ToolDescription = z.infer<typeof toolSchema>;
export type DescribeResult = z.infer<typeof describeSchema>;
export type { CallToolResult };

export type Decoded<T> = { ok: true; value: T } | { ok: false; reason: string };

/** Checks size, JSON and shape of a servlet's output; the reason reads as a sentence about the servlet. */
export function decodeOutput<T>(
  bytes: Uint8Array | null,
  what: 'describe' | 'call',
  maxBytes: number,
): Decoded<T> {
  const schema = (what === 'describe' ? describeSchema : callResultSchema) as unknown as z.ZodType<T>;
  if (!bytes || bytes.byteLength === 0) return { ok: false, reason: `${what} returned no output` };
  if (bytes.byteLength > maxBytes) {
    return { ok: false, reason: `${what} returned ${bytes.byteLength} bytes, over the limit of ${maxBytes} bytes` };
  }
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
  } catch (err) {
    return { ok: false, reason: `${what} returned invalid JSON: ${(err as Error).message}` };
  }
  const parsed = schema.safeParse(json);
  if (parsed.success) return { ok: true, value: parsed.data };
  const issues = parsed.error.issues.slice(0, 3).map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
  return { ok: false, reason: `${what} returned an invalid result: ${issues.join('; ')}` };
}

/** The tool error a run receives instead of a result: the model reads the reason and can recover. */
export function toolError(reason: string): CallToolResult {
  return { content: [{ type: 'text', text: reason }], isError: true };
}
