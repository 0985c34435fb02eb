/** One Server-Sent Event: its `event` name (`message` when unnamed), its `id` if it had one, and its data. */
export interface SseEvent {
  event: string;
  id?: string;
  data: string;
}

export interface SseParserOptions {
  /** Each comment line (`: keep-alive`), without its colon and the one space after it. */
  onComment?: (text: string) => void;
}

/**
 * A Server-Sent Events parser (the WHATWG event-stream format): feed it text as it arrives, in any cuts; it calls
 * `onEvent` at each blank line ending an event with data. `retry:` is skipped. Each piece is scanned once: a line
 * that comes in many pieces (an entry of megabytes) is joined once, when its end arrives.
 */
export function createSseParser(onEvent: (event: SseEvent) => void, options: SseParserOptions = {}) {
  /** The current line's pieces so far (none holds a line end). */
  let pieces: string[] = [];
  /** The last piece ended with `\r`: a `\n` starting the next one belongs to that line end. */
  let afterCr = false;
  let event = '';
  let id: string | undefined;
  let data: string[] = [];

  const line = (text: string) => {
    if (text === '') {
      if (data.length > 0) onEvent({ event: event || 'message', ...(id === undefined ? {} : { id }), data: data.join('\n') });
      event = '';
      id = undefined;
      data = [];
      return;
    }
    const colon = text.indexOf(':');
    const field = colon < 0 ? text : text.slice(0, colon);
    const value = colon < 0 ? '' : text.slice(colon + 1).replace(/^ /, '');
    if (field === '') options.onComment?.(value);
    else if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
    else if (field === 'id') id = value;
  };

  const lineEnd = /\r\n|\r|\n/g;
  return {
    push(text: string) {
      if (text === '') return;
      // A line ends at \n, \r\n or \r.
      let from = afterCr && text.startsWith('\n') ? 1 : 0;
      afterCr = false;
      lineEnd.lastIndex = from;
      for (let match = lineEnd.exec(text); match; match = lineEnd.exec(text)) {
        const rest = text.slice(from, match.index);
        line(pieces.length === 0 ? rest : pieces.join('') + rest);
        pieces = [];
        from = lineEnd.lastIndex;
        afterCr = match[0] === '\r' && from === text.length;
      }
      if (from < text.length) pieces.push(text.slice(from));
    },
  };
}
