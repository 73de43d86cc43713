// API talks to the Hearth server on the page's own origin: the OpenAI
// model list and streaming chat completions, Ollama's /api/ps for what is
// loaded, /health, and the model catalog, pull and delete.

import { events } from './sse.js';

/**
 * Unreachable is the error of a request that got no answer at all: the
 * server is not running, or the connection broke (fetch's bare "Failed to
 * fetch" says neither).
 */
export class Unreachable extends Error {
  constructor(midway = false) {
    const where = typeof location === 'object' && location.origin ? ` at ${location.origin}` : '';
    super(
      midway
        ? `The connection to Hearth${where} broke before the answer ended: the server may have stopped.`
        : `Cannot reach Hearth${where}: the server is not running or not answering.`,
    );
    this.name = 'Unreachable';
    this.unreachable = true;
  }
}

// call is fetch with a network failure turned into Unreachable.
async function call(url, init) {
  try {
    return await fetch(url, init);
  } catch (e) {
    if (e && e.name === 'AbortError') throw e;
    throw new Unreachable();
  }
}

// unbroken yields what a body reader yields, with a failed read (the
// connection broke; an abort stays an AbortError) turned into Unreachable.
async function* unbroken(gen) {
  try {
    yield* gen;
  } catch (e) {
    throw e && e.name === 'TypeError' ? new Unreachable(true) : e;
  }
}

/** errorMessage returns the message a failed response carries, verbatim. */
export async function errorMessage(res) {
  return (await errorOf(res)).message;
}

/**
 * errorOf returns what a failed response says: its message (verbatim), and
 * the OpenAI body's param and code when it has them.
 */
export async function errorOf(res) {
  let text = '';
  try {
    text = await res.text();
  } catch {
    // The body is gone; the status line is all there is.
  }
  let param = '';
  let code = '';
  try {
    const j = JSON.parse(text);
    if (j && j.error && typeof j.error === 'object') {
      param = typeof j.error.param === 'string' ? j.error.param : '';
      code = typeof j.error.code === 'string' ? j.error.code : '';
    }
  } catch {
    // Not JSON: no param or code.
  }
  const message = messageOf(text) || `${res.status} ${res.statusText || 'error'}`.trim();
  return { message, param, code };
}

// failure is the Error for a failed response, carrying its status, param
// and code.
async function failure(res) {
  const { message, param, code } = await errorOf(res);
  const err = new Error(message);
  err.status = res.status;
  err.param = param;
  err.code = code;
  return err;
}

/** messageOf pulls the message out of an OpenAI, Anthropic or Ollama error body. */
export function messageOf(text) {
  try {
    const j = JSON.parse(text);
    if (j && typeof j.error === 'string') return j.error;
    if (j && j.error && typeof j.error.message === 'string') return j.error.message;
    if (j && typeof j.message === 'string') return j.message;
  } catch {
    // Not JSON: the text itself is the message.
  }
  return String(text || '').trim();
}

/** listModels returns /v1/models' data array, sorted by id. */
export async function listModels(signal) {
  const res = await call('v1/models', { signal, headers: { Accept: 'application/json' } });
  if (!res.ok) throw await failure(res);
  const body = await res.json();
  const data = Array.isArray(body && body.data) ? body.data : [];
  return data.filter((m) => m && typeof m.id === 'string').sort((a, b) => a.id.localeCompare(b.id));
}

/**
 * running returns the models /api/ps lists as {name, loading, progress}, or
 * null when the server has no such route.
 */
export async function running(signal) {
  try {
    const res = await fetch('api/ps', { signal, headers: { Accept: 'application/json' } });
    if (!res.ok) return null;
    const body = await res.json();
    const list = Array.isArray(body && body.models) ? body.models : [];
    return list.map((m) => ({
      name: m.name || m.model || m.id || '',
      loading: m.loading === true || m.status === 'loading',
      progress: typeof m.progress === 'number' ? m.progress : null,
    }));
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    return null;
  }
}

/**
 * chat posts a streaming chat completion and calls onChunk with every
 * parsed chunk. It resolves when the stream ends ([DONE] or EOF) and
 * rejects with an Error carrying the server's message on a failure, or an
 * AbortError when signal aborts.
 */
export async function chat(body, { signal, onChunk, onOpen }) {
  const res = await call('v1/chat/completions', {
    method: 'POST',
    signal,
    headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
    body: JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } }),
  });
  if (!res.ok) throw await failure(res);
  if (onOpen) onOpen();
  const type = res.headers.get('Content-Type') || '';
  if (!type.includes('text/event-stream')) {
    // A server that ignored stream: true answers one JSON object.
    const j = await res.json();
    const c = j.choices && j.choices[0];
    onChunk({ choices: [{ index: 0, delta: { content: (c && c.message && c.message.content) || '' }, finish_reason: c && c.finish_reason }], usage: j.usage });
    return;
  }
  for await (const ev of unbroken(events(res.body))) {
    const data = ev.data.trim();
    if (data === '[DONE]') return;
    let chunk;
    try {
      chunk = JSON.parse(data);
    } catch {
      throw new Error(`the server sent a malformed stream event: ${data.slice(0, 200)}`);
    }
    if (chunk && chunk.error) throw new Error(messageOf(JSON.stringify(chunk)) || 'the server reported an error');
    if (ev.event === 'error') throw new Error(messageOf(data));
    onChunk(chunk);
  }
}

/** health reports whether the server answers GET /health. */
export async function health(signal) {
  try {
    const res = await fetch('health', { signal, cache: 'no-store', headers: { Accept: 'application/json' } });
    return res.ok;
  } catch {
    return false;
  }
}

/**
 * catalog returns GET /api/catalog's models (best fit for this machine
 * first), or null when the server has no catalog (404).
 */
export async function catalog(signal) {
  const res = await call('api/catalog', { signal, headers: { Accept: 'application/json' } });
  if (res.status === 404 || res.status === 405 || res.status === 501) return null;
  if (!res.ok) throw await failure(res);
  const body = await res.json();
  const list = Array.isArray(body && body.models) ? body.models : [];
  return list.filter((m) => m && typeof m.name === 'string');
}

// lines yields the lines of a response body as they arrive.
async function* lines(body) {
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let buf = '';
  try {
    for (;;) {
      const r = await reader.read();
      buf += r.done ? decoder.decode() : decoder.decode(r.value, { stream: true });
      const parts = buf.split('\n');
      buf = r.done ? '' : parts.pop();
      for (const l of parts) if (l.trim()) yield l;
      if (r.done) return;
    }
  } finally {
    reader.releaseLock();
  }
}

/**
 * pull downloads a model (POST /api/pull, Ollama's streamed progress) and
 * calls onProgress with each line: {status, completed, total, files_done,
 * files}. It resolves on "success" and rejects with the server's message,
 * or an AbortError when signal aborts (the server then stops the download
 * and keeps its partial files for the next pull).
 */
export async function pull(name, { signal, onProgress }) {
  const res = await call('api/pull', {
    method: 'POST',
    signal,
    headers: { 'Content-Type': 'application/json', Accept: 'application/x-ndjson' },
    body: JSON.stringify({ model: name, stream: true }),
  });
  if (!res.ok) throw await failure(res);
  for await (const l of unbroken(lines(res.body))) {
    let p;
    try {
      p = JSON.parse(l);
    } catch {
      throw new Error(`the server sent a malformed progress line: ${l.slice(0, 200)}`);
    }
    if (p && typeof p.error === 'string') throw new Error(p.error);
    if (p && p.status === 'success') return;
    if (p && onProgress) onProgress(p);
  }
  throw new Unreachable(true);
}

/** remove deletes a downloaded model (DELETE /api/delete, Ollama's). */
export async function remove(name) {
  const res = await call('api/delete', {
    method: 'DELETE',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: name }),
  });
  if (!res.ok) throw await failure(res);
}
