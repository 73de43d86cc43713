// SSE reads a text/event-stream response body as the browser's
// EventSource would (fields, comments, multi-line data, CR/LF/CRLF line
// ends), but over fetch, so the request can be a POST and can be aborted.

/** Parser turns stream text, fed in arbitrary pieces, into events. */
export class Parser {
  /** @param {(ev: {event: string, data: string, id: string}) => void} onEvent */
  constructor(onEvent) {
    this.onEvent = onEvent;
    this.buf = '';
    this.data = [];
    this.event = '';
    this.id = '';
  }

  /** push feeds the next piece of text. */
  push(text) {
    this.buf += text;
    let start = 0;
    for (;;) {
      let k = start;
      while (k < this.buf.length && this.buf[k] !== '\n' && this.buf[k] !== '\r') k++;
      if (k >= this.buf.length) break;
      // A CR at the very end may be the first half of a CRLF.
      if (this.buf[k] === '\r' && k + 1 === this.buf.length) break;
      this.line(this.buf.slice(start, k));
      start = k + (this.buf[k] === '\r' && this.buf[k + 1] === '\n' ? 2 : 1);
    }
    this.buf = this.buf.slice(start);
  }

  /** end flushes a final event that lacked its blank line. */
  end() {
    if (this.buf !== '') {
      this.line(this.buf.replace(/\r$/, ''));
      this.buf = '';
    }
    this.line('');
  }

  line(l) {
    if (l === '') {
      if (this.data.length) this.onEvent({ event: this.event || 'message', data: this.data.join('\n'), id: this.id });
      this.data = [];
      this.event = '';
      return;
    }
    if (l[0] === ':') return;
    const colon = l.indexOf(':');
    const field = colon === -1 ? l : l.slice(0, colon);
    let value = colon === -1 ? '' : l.slice(colon + 1);
    if (value[0] === ' ') value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
    else if (field === 'id') this.id = value;
  }
}

/**
 * events yields the events of a fetch response body (a ReadableStream of
 * bytes) as they arrive.
 */
export async function* events(body) {
  const queue = [];
  const parser = new Parser((ev) => queue.push(ev));
  const decoder = new TextDecoder();
  const reader = body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        parser.push(decoder.decode());
        parser.end();
        yield* queue.splice(0);
        return;
      }
      parser.push(decoder.decode(value, { stream: true }));
      yield* queue.splice(0);
    }
  } finally {
    reader.releaseLock();
  }
}
