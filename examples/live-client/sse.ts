/**
 * A small Server-Sent Events parser (the text/event-stream format of the HTML standard) over a fetch
 * body: what an application needs and nothing more. No dependency.
 */
export type SseItem =
  | { readonly kind: 'event'; readonly id: string | undefined; readonly event: string; readonly data: string }
  | { readonly kind: 'retry'; readonly ms: number }
  | { readonly kind: 'comment'; readonly text: string };

export async function* parseSse(body: AsyncIterable<Uint8Array>): AsyncGenerator<SseItem> {
  const decoder = new TextDecoder();
  let buffer = '';
  let id: string | undefined;
  let event = '';
  let data: string[] = [];
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
      if (line === '') {
        if (data.length > 0 || event !== '') {
          yield { kind: 'event', id, event: event || 'message', data: data.join('\n') };
        }
        event = '';
        data = [];
        id = undefined;
        continue;
      }
      if (line.startsWith(':')) {
        yield { kind: 'comment', text: line.slice(1).trimStart() };
        continue;
      }
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
      else if (field === 'id' && !value.includes('\0')) id = value;
      else if (field === 'retry' && /^\d+$/.test(value)) yield { kind: 'retry', ms: Number(value) };
    }
  }
}
