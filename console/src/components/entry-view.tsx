import type { Entry } from '../api/types';
import { when } from '../lib/forms';

/** Content as text: a string as it is, anything else as its JSON. Never HTML. */
export const asText = (content: unknown) => (typeof content === 'string' ? content : JSON.stringify(content, null, 2));

const LEVELS: Record<number, string> = { 30: 'info', 40: 'warn', 50: 'error' };

/** One entry of a run. Model output and tool results are text nodes: markup in them is shown, never run. */
export function EntryView({ entry }: { entry: Entry }) {
  const msg = entry.msg ?? '';
  if (entry.lastMessage) {
    return (
      <li class={`entry answer${entry.error ? ' failed' : ''}`}>
        <p class="what">{entry.error ? `Error: ${entry.error}` : msg}</p>
        {!entry.error && <pre class="content">{asText(entry.lastMessage.content)}</pre>}
      </li>
    );
  }
  if (entry.exchange) {
    const folded = entry.exchange.role === 'tool' || msg.startsWith('tool call:');
    if (folded) {
      return (
        <li class={`entry tool ${entry.exchange.role}`}>
          <details>
            <summary>
              {msg}
              {entry.replayed && <span class="muted"> (recorded result: the tool was not called)</span>}
            </summary>
            <pre class="content">{asText(entry.exchange.content)}</pre>
          </details>
        </li>
      );
    }
    return (
      <li class={`entry message ${entry.exchange.role}`}>
        <p class="what">{msg === 'prompt' ? 'Prompt' : msg === 'assistant' ? 'Assistant' : msg}</p>
        <pre class="content">{asText(entry.exchange.content)}</pre>
      </li>
    );
  }
  if (entry.approval) {
    return (
      <li class="entry ask">
        <details open>
          <summary>{msg}</summary>
          <pre class="content">{asText(entry.approval.arguments)}</pre>
        </details>
      </li>
    );
  }
  if (entry.input) {
    return (
      <li class="entry ask">
        <p class="what">{msg}</p>
        <p>{entry.input.message}</p>
      </li>
    );
  }
  return (
    <li class={`entry log ${LEVELS[entry.level ?? 30] ?? ''}`}>
      {entry.time !== undefined && <time dateTime={new Date(entry.time).toISOString()}>{when(entry.time)}</time>} <span>{msg}</span>
      {entry.error && <span> {entry.error}</span>}
    </li>
  );
}
