/**
 * Server-sent events, as OpenAI-style streaming uses them: each event one `data: <json>` line and a
 * blank line, the stream ended by `data: [DONE]`. The writer for the server, the reader for its
 * clients (the load generator, the tests).
 */

/** The `[DONE]` that ends an OpenAI-style stream. */
export const SSE_DONE = '[DONE]';

/** One event carrying `data` (a string is sent as is; anything else as JSON, which has no newlines). */
export function sseEvent(data: unknown): string {
  // JSON text holds no line breaks (JSON.stringify escapes them in strings): one data line.
  if (typeof data !== 'string') return `data: ${JSON.stringify(data)}\n\n`;
  return `data: ${data.split(/\r\n|\r|\n/).join('\ndata: ')}\n\n`;
}

/**
 * The data of each event of an event stream (multi-line data joined with `\n`), as the bytes come.
 * Comments (`:` lines) and fields other than `data` are skipped; an event without data yields
 * nothing. The stream's end ends the iteration (a last event without its blank line is yielded).
 *
 * @example
 *   const res = await fetch(url, { method: 'POST', body });
 *   for await (const data of readSse(res.body!)) if (data !== SSE_DONE) console.log(JSON.parse(data));
 */
export async function* readSse(body: AsyncIterable<Uint8Array>): AsyncGenerator<string, void, undefined> {
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  const line = (l: string): string | null => {
    if (l === '') {
      const event = data.length > 0 ? data.join('\n') : null;
      data = [];
      return event;
    }
    if (l.startsWith(':')) return null;
    const colon = l.indexOf(':');
    const field = colon < 0 ? l : l.slice(0, colon);
    let value = colon < 0 ? '' : l.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    return null;
  };
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.search(/\r\n|\r|\n/)) >= 0) {
      // A lone \r at the end of the buffer may be the first half of \r\n: wait for more.
      if (buffer[end] === '\r' && end === buffer.length - 1) break;
      const l = buffer.slice(0, end);
      buffer = buffer.slice(end + (buffer.startsWith('\r\n', end) ? 2 : 1));
      const event = line(l);
      if (event !== null) yield event;
    }
  }
  buffer += decoder.decode();
  for (const l of buffer.split(/\r\n|\r|\n/)) {
    const event = line(l);
    if (event !== null) yield event;
  }
  if (data.length > 0) yield data.join('\n');
}
