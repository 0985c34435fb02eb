/** One Server-Sent Event: its `event` name (`message` when unnamed), its `id` if it had one, and its data. */
export interface SseEvent {
  event: string;
  id?: string;
  data: string;
}

/**
 * A Server-Sent Events parser (the WHATWG event-stream format): feed it text as it arrives, in any cuts; it calls
 * `onEvent` at each blank line ending an event with data. Comments (`: keep-alive`) and `retry:` are skipped.
 */
export function createSseParser(onEvent: (event: SseEvent) => void) {
  let buffer = '';
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
    if (text.startsWith(':')) return;
    const colon = text.indexOf(':');
    const field = colon < 0 ? text : text.slice(0, colon);
    const value = colon < 0 ? '' : text.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
    else if (field === 'id') id = value;
  };

  return {
    push(text: string) {
      buffer += text;
      // A line ends at \n, \r\n or \r; a \r at the very end may be the first half of a \r\n still to come.
      for (let match = /\r\n|\r(?!$)|\n/.exec(buffer); match; match = /\r\n|\r(?!$)|\n/.exec(buffer)) {
        line(buffer.slice(0, match.index));
        buffer = buffer.slice(match.index + match[0].length);
      }
    },
  };
}
