// API talks to the Hearth server on the page's own origin: the OpenAI
// model list and streaming chat completions, and Ollama's /api/ps for what
// is loaded.

import { events } from './sse.js';

/** errorMessage returns the message a failed response carries, verbatim. */
export async function errorMessage(res) {
  let text = '';
  try {
    text = await res.text();
  } catch {
    // The body is gone; the status line is all there is.
  }
  const msg = messageOf(text);
  return msg || `${res.status} ${res.statusText || 'error'}`.trim();
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
  const res = await fetch('v1/models', { signal, headers: { Accept: 'application/json' } });
  if (!res.ok) throw new Error(await errorMessage(res));
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
  const res = await fetch('v1/chat/completions', {
    method: 'POST',
    signal,
    headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
    body: JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } }),
  });
  if (!res.ok) {
    const err = new Error(await errorMessage(res));
    err.status = res.status;
    throw err;
  }
  if (onOpen) onOpen();
  const type = res.headers.get('Content-Type') || '';
  if (!type.includes('text/event-stream')) {
    // A server that ignored stream: true answers one JSON object.
    const j = await res.json();
    const c = j.choices && j.choices[0];
    onChunk({ choices: [{ index: 0, delta: { content: (c && c.message && c.message.content) || '' }, finish_reason: c && c.finish_reason }], usage: j.usage });
    return;
  }
  for await (const ev of events(res.body)) {
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
