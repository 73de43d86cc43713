// Conv holds what a conversation is and how it becomes a request and an
// export. A conversation is plain data (it is stored as is):
//
//   {id, title, created, updated, model, system, params, messages: [
//     {id, role: 'user'|'assistant', text, attachments?, reasoning?, model?,
//      stats?, error?, stopped?, rejected?}]}
//
// params holds the sampling settings the user set; empty ones are left to
// the server's defaults. rejected is why the server refused a message (the
// model could not take it): such a message stays in the conversation,
// marked, but is never sent again, so one refused image does not make
// every later turn fail.

import { contentParts } from './attach.js';
import { strip, split } from './think.js';

/** PARAMS lists the per-conversation sampling settings: name, label, bounds. */
export const PARAMS = [
  { name: 'temperature', label: 'Temperature', min: 0, max: 2, step: 0.05 },
  { name: 'top_p', label: 'Top P', min: 0, max: 1, step: 0.01 },
  { name: 'top_k', label: 'Top K', min: 0, max: 1000, step: 1, int: true },
  { name: 'min_p', label: 'Min P', min: 0, max: 1, step: 0.01 },
  { name: 'max_tokens', label: 'Max tokens', min: 1, max: 1048576, step: 1, int: true },
  { name: 'seed', label: 'Seed', min: 0, max: 2 ** 53 - 1, step: 1, int: true },
];

/** create returns an empty conversation. */
export function create(id, model, now = Date.now()) {
  return { id, title: 'New chat', created: now, updated: now, model: model || '', system: '', params: {}, messages: [] };
}

/** titleFrom returns a short title from a first message. */
export function titleFrom(text) {
  const t = String(text || '').replace(/\s+/g, ' ').trim();
  if (!t) return 'New chat';
  return t.length > 48 ? t.slice(0, 47).trimEnd() + '…' : t;
}

/** cleanParams returns the settings that are set and valid, as numbers. */
export function cleanParams(params = {}) {
  const out = {};
  for (const p of PARAMS) {
    const raw = params[p.name];
    if (raw === '' || raw === undefined || raw === null) continue;
    const v = Number(raw);
    if (!Number.isFinite(v) || v < p.min || v > p.max) continue;
    out[p.name] = p.int ? Math.round(v) : v;
  }
  return out;
}

/**
 * request returns the chat completion body for conv's messages, up to and
 * including upTo (an index; all when omitted). Replies go back without
 * their reasoning, and failed or empty turns and rejected messages are
 * left out.
 */
export function request(conv, upTo = conv.messages.length - 1) {
  return { model: conv.model, messages: build(conv, upTo).messages, ...cleanParams(conv.params) };
}

/**
 * sources returns, for each message of request(conv, upTo), the id of the
 * conversation message it came from ('' for the system prompt), so that an
 * error naming messages[i] can be traced back.
 */
export function sources(conv, upTo = conv.messages.length - 1) {
  return build(conv, upTo).ids;
}

function build(conv, upTo) {
  const messages = [];
  const ids = [];
  if (conv.system && conv.system.trim()) {
    messages.push({ role: 'system', content: conv.system });
    ids.push('');
  }
  for (const m of conv.messages.slice(0, upTo + 1)) {
    if (m.rejected) continue;
    if (m.role === 'user') {
      messages.push({ role: 'user', content: contentParts(m.text, m.attachments || []) });
      ids.push(m.id);
    } else if (m.role === 'assistant' && !m.error) {
      const text = strip(m.text);
      if (text) {
        messages.push({ role: 'assistant', content: text });
        ids.push(m.id);
      }
    }
  }
  return { messages, ids };
}

/**
 * blame returns the id of the message a failed chat request's error puts
 * at fault: the one its param names ("messages[2].content[0]"), else the
 * message just sent (lastID) for a refusal of the conversation itself
 * (no param, "messages", or a body too large). It returns '' when the
 * failure is not a message's: the server or the connection failed, the
 * model is at fault, a setting, or the system prompt.
 */
export function blame(err, ids, lastID) {
  if (!err || ![400, 413, 422].includes(err.status)) return '';
  const param = String(err.param || '');
  const m = /^messages\[(\d+)\]/.exec(param);
  if (m) return ids[Number(m[1])] || '';
  if (err.status === 413 || param === '' || param === 'messages') return lastID || '';
  return '';
}

/** toMarkdown renders conv as a Markdown document. */
export function toMarkdown(conv) {
  const lines = [`# ${conv.title}`, ''];
  const meta = [];
  if (conv.model) meta.push(`Model: ${conv.model}`);
  const p = cleanParams(conv.params);
  if (Object.keys(p).length) meta.push('Settings: ' + Object.entries(p).map(([k, v]) => `${k}=${v}`).join(', '));
  if (meta.length) lines.push(...meta.map((m) => `*${m}*`), '');
  if (conv.system) lines.push('## System', '', conv.system, '');
  for (const m of conv.messages) {
    lines.push(m.role === 'user' ? '## User' : `## Assistant${m.model ? ` (${m.model})` : ''}`, '');
    for (const a of m.attachments || []) lines.push(`*[${a.kind}: ${a.name}]*`, '');
    if (m.rejected) lines.push(`*(not sent to the model: ${m.rejected})*`, '');
    if (m.role === 'assistant') {
      const { thinking, answer } = split(m.text, m.reasoning);
      if (thinking) lines.push('<details><summary>Thinking</summary>', '', thinking, '', '</details>', '');
      if (answer.trim()) lines.push(answer.trim(), '');
      if (m.error) lines.push(`> Error: ${m.error}`, '');
      if (m.stopped) lines.push('*(stopped)*', '');
    } else {
      lines.push(m.text, '');
    }
  }
  return lines.join('\n');
}

/** fileName returns a file name for exporting conv with the extension ext. */
export function fileName(conv, ext) {
  const base = String(conv.title || 'chat').toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '-').replace(/^-+|-+$/g, '').slice(0, 60) || 'chat';
  return `${base}.${ext}`;
}
