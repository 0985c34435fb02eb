import { isDeepStrictEqual } from 'node:util';
import type { CallToolResult as McpCallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { CallToolResult, ContentItem } from '../contract/types';

/** How much of an embedded text resource is shown inline; the rest is cut with a note. */
export const RESOURCE_TEXT_MAX_CHARS = 64 * 1024;

/**
 * An MCP tool result as our contract's CallToolResult, bounded to `maxChars` of text (images count their base64):
 * - text as text; images kept as image items (the provider layer decides what each model sees);
 * - `structuredContent` as JSON text, unless a text item already carries the same JSON (servers are asked to mirror
 *   it so: then the model sees it once);
 * - audio and binary resources as a placeholder naming type and size; resource links as a line naming the resource;
 *   embedded text resources inline (at most RESOURCE_TEXT_MAX_CHARS each); content of unknown kinds as a placeholder;
 * - `isError` kept.
 */
export function toCallToolResult(result: McpCallToolResult, options: { maxChars: number }): CallToolResult {
  const items: ContentItem[] = [];
  for (const item of result.content ?? []) items.push(convert(item));
  if (result.structuredContent !== undefined && !mirrored(result.structuredContent, items)) {
    items.push({ type: 'text', text: JSON.stringify(result.structuredContent) });
  }
  return { content: bound(items, options.maxChars), ...(result.isError ? { isError: true } : {}) };
}

type McpContent = McpCallToolResult['content'][number];

function convert(item: McpContent): ContentItem {
  switch (item.type) {
    case 'text':
      return { type: 'text', text: item.text };
    case 'image':
      return { type: 'image', data: item.data, mimeType: item.mimeType };
    case 'audio':
      return placeholder('audio', item.mimeType, base64Bytes(item.data));
    case 'resource_link':
      return { type: 'text', text: `[resource link: ${item.name} <${item.uri}>${item.mimeType ? ` (${item.mimeType})` : ''}${item.description ? ` — ${item.description}` : ''}]` };
    case 'resource': {
      const r = item.resource;
      if ('text' in r && typeof r.text === 'string') {
        const text = r.text.length > RESOURCE_TEXT_MAX_CHARS ? `${r.text.slice(0, RESOURCE_TEXT_MAX_CHARS)}\n[… cut: ${r.text.length} characters in all]` : r.text;
        return { type: 'text', text: `[resource <${r.uri}>${r.mimeType ? ` (${r.mimeType})` : ''}]\n${text}` };
      }
      return placeholder(`resource <${r.uri}>`, r.mimeType ?? 'application/octet-stream', base64Bytes('blob' in r && typeof r.blob === 'string' ? r.blob : ''));
    }
    default:
      return { type: 'text', text: `[content of a kind not shown: ${String((item as { type?: unknown }).type)}]` };
  }
}

function placeholder(what: string, mimeType: string, bytes: number): ContentItem {
  return { type: 'text', text: `[${what}: ${mimeType}, ${formatBytes(bytes)}, not shown]` };
}

/** Whether a text item holds the same JSON as the structured content (only JSON-looking texts are parsed). */
function mirrored(structured: unknown, items: ContentItem[]): boolean {
  return items.some((item) => {
    if (item.type !== 'text') return false;
    const text = item.text.trim();
    if (!text.startsWith('{') && !text.startsWith('[')) return false;
    try {
      return isDeepStrictEqual(JSON.parse(text), structured);
    } catch {
      return false;
    }
  });
}

/** At most `maxChars` of content in all: the item that crosses the line is cut (an image is dropped with a note). */
function bound(items: ContentItem[], maxChars: number): ContentItem[] {
  const out: ContentItem[] = [];
  let left = maxChars;
  for (const [i, item] of items.entries()) {
    const size = item.type === 'text' ? item.text.length : item.data.length;
    if (size <= left) {
      out.push(item);
      left -= size;
      continue;
    }
    const dropped = items.length - i - 1;
    const note = `[… the result is over ${maxChars} characters: cut here${dropped > 0 ? `, ${dropped} more item(s) dropped` : ''}]`;
    if (item.type === 'text') out.push({ type: 'text', text: `${item.text.slice(0, Math.max(0, left))}\n${note}` });
    else out.push({ type: 'text', text: `[image: ${item.mimeType}, ${formatBytes(base64Bytes(item.data))}, not shown] ${note}` });
    break;
  }
  return out;
}

function base64Bytes(b64: string): number {
  const padding = b64.endsWith('==') ? 2 : b64.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((b64.length * 3) / 4) - padding);
}

function formatBytes(n: number): string {
  if (n < 1024) return `${n} bytes`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
