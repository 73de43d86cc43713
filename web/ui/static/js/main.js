// Main wires the chat page together: conversations (stored in the
// browser), the model picker, the composer, streaming replies with stop,
// regenerate and edit-and-resend, live stats and the keyboard.

import * as api from './api.js';
import { missing, missingMessage } from './attach.js';
import * as conv from './conv.js';
import { Composer } from './composer.js';
import { Picker, fitText } from './models.js';
import { h } from './render.js';
import { Settings } from './settings.js';
import { Sidebar } from './sidebar.js';
import { Meter } from './stats.js';
import * as store from './store.js';
import { View } from './view.js';

const $ = (id) => document.getElementById(id);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const app = {
  db: null,
  convs: [], // saved conversations, newest first
  current: null, // the open conversation (unsaved until its first message)
  stream: null, // {conv, msg, ctrl, meter, waitText, frame, saved} while a reply streams
};

const picker = new Picker($('model-button'), $('model-list'), selectModel);
const view = new View($('messages'), {
  onEdit: editAndResend,
  onRegenerate: regenerate,
  contextLength: (id) => {
    const m = picker.models.find((x) => x.id === id);
    return m && m.context_length;
  },
});
const composer = new Composer(
  { form: $('composer'), input: $('composer-input'), fileInput: $('file-input'), attachButton: $('attach-button'), tray: $('attachments'), overlay: $('drop-overlay') },
  { onSubmit: () => send(false), onError: (msg) => notice(msg, 'error'), onChange: () => {} },
);
const sidebar = new Sidebar($('conv-list'), { onOpen: openConv, onRename: renameConv, onDelete: deleteConv });
const settings = new Settings($('settings'), (change) => {
  Object.assign(app.current, change);
  if (app.current.messages.length) saveSoon(app.current);
});

/** announce tells screen readers about something that happened. */
function announce(text) {
  const a = $('announce');
  a.textContent = '';
  setTimeout(() => {
    a.textContent = text;
  }, 50);
}

/** notice shows a message above the composer, with optional action buttons. */
function notice(text, kind = 'info', actions = []) {
  const n = $('notice');
  n.className = `notice notice-${kind}`;
  const buttons = actions.map((a) => h('button', { type: 'button', class: a.primary ? 'primary' : '', onclick: a.run }, a.label));
  const close = h('button', { type: 'button', class: 'icon', 'aria-label': 'Dismiss', onclick: clearNotice }, '×');
  n.replaceChildren(h('span', { class: 'notice-text' }, text), ...buttons, close);
  n.hidden = false;
}

function clearNotice() {
  $('notice').hidden = true;
  $('notice').replaceChildren();
}

async function persist(c) {
  if (!c.messages.length || c.deleted) return;
  if (c === app.current) store.setPref('current', c.id);
  if (!app.convs.includes(c)) app.convs.unshift(c);
  app.convs.sort((a, b) => b.updated - a.updated);
  try {
    await app.db.put(c);
  } catch (e) {
    notice(`Could not save the conversation: ${e.message}`, 'error');
  }
}

let saveTimer = 0;
function saveSoon(c) {
  clearTimeout(saveTimer);
  saveTimer = setTimeout(() => persist(c), 400);
}

function renderAll() {
  const c = app.current;
  const s = app.stream;
  sidebar.render(app.convs, c.id, s && s.conv.id);
  view.render(c, s && s.conv === c ? s.msg : null);
  $('send-button').hidden = !!s;
  $('stop-button').hidden = !s;
  $('export-json').disabled = $('export-md').disabled = !c.messages.length;
  document.title = c.messages.length ? `${c.title} · Hearth` : 'Hearth';
  statsBar();
}

// statsBar shows how much of the model's context the conversation uses
// (per-reply speed and timing are under each reply).
function statsBar() {
  const c = app.current;
  const s = app.stream;
  let snap = null;
  let model = c.model;
  if (s && s.conv === c) snap = s.meter.snapshot();
  else {
    const last = [...c.messages].reverse().find((m) => m.role === 'assistant' && m.stats);
    if (last) {
      snap = last.stats;
      model = last.model || model;
    }
  }
  const m = picker.models.find((x) => x.id === model);
  const ctx = m && m.context_length;
  const used = snap && snap.totalTokens;
  const known = used !== null && used !== undefined;
  $('stats-text').textContent = known ? (ctx ? `Context: ${used} of ${ctx} tokens used` : `Context: ${used} tokens used`) : '';
  const meter = $('ctx-meter');
  meter.hidden = !(ctx && known);
  if (!meter.hidden) {
    meter.max = ctx;
    meter.value = Math.min(used, ctx);
    meter.high = ctx * 0.85;
    meter.title = `${used} of ${ctx} tokens of context used`;
  }
}

function schedule(s) {
  if (s.frame) return;
  s.frame = requestAnimationFrame(() => {
    s.frame = 0;
    if (s.conv === app.current && app.stream === s) {
      view.update(s.meter.snapshot(), s.waitText);
      statsBar();
    }
  });
}

async function loadModels() {
  picker.setState('loading');
  try {
    const models = await api.listModels();
    const want = [app.current.model, store.pref('model')].find((id) => id && models.some((m) => m.id === id));
    const id = app.current.model && app.current.messages.length ? app.current.model : want || (models[0] && models[0].id) || '';
    picker.setModels(models, id);
    if (!app.current.model) app.current.model = id;
    modelStatus();
    statsBar();
  } catch (e) {
    picker.setState('error');
    notice(`Could not list models: ${e.message}`, 'error', [{ label: 'Retry', run: () => (clearNotice(), loadModels()) }]);
  }
}

// refreshModels quietly updates the list (what is loaded changes as
// replies are asked of other models).
async function refreshModels() {
  if (picker.state !== 'ready' || picker.isOpen()) return;
  try {
    picker.setModels(await api.listModels(), picker.selected);
    modelStatus();
  } catch {
    // The next full load will say what is wrong.
  }
}

function modelStatus() {
  const m = picker.model();
  const el = $('model-status');
  el.textContent = m && m.fit && m.fit.status === "won't fit" ? fitText(m.fit) : '';
}

function selectModel(id) {
  app.current.model = id;
  store.setPref('model', id);
  if (app.current.messages.length) saveSoon(app.current);
  modelStatus();
  statsBar();
  announce(`Model ${id} selected`);
}

function send(force) {
  if (app.stream) return;
  const text = composer.text.trim();
  const atts = composer.attachments;
  if (!text && !atts.length) return;
  if (composer.busy) {
    notice('Still reading the attachments; send again in a moment.', 'info');
    return;
  }
  const c = app.current;
  if (!c.model) {
    notice('Choose a model first.', 'error');
    return;
  }
  const lack = missing(atts, picker.model());
  if (lack.length && !force) {
    notice(missingMessage(lack, c.model), 'warn', [{ label: 'Send anyway', run: () => send(true) }]);
    return;
  }
  clearNotice();
  const attachments = composer.take();
  c.messages.push({ id: store.newID(), role: 'user', text, attachments });
  if (c.title === 'New chat') c.title = conv.titleFrom(text || attachments.map((a) => a.name).join(', '));
  generate(c);
}

async function generate(c) {
  const msg = { id: store.newID(), role: 'assistant', text: '', reasoning: '', model: c.model };
  c.messages.push(msg);
  c.updated = Date.now();
  const s = { conv: c, msg, ctrl: new AbortController(), meter: new Meter(performance.now()), waitText: '', frame: 0, saved: Date.now() };
  app.stream = s;
  await persist(c);
  renderAll();
  watchLoading(s);
  try {
    await api.chat(conv.request(c, c.messages.length - 2), { signal: s.ctrl.signal, onChunk: (ch) => onChunk(s, ch) });
  } catch (e) {
    if (e.name === 'AbortError') msg.stopped = true;
    else msg.error = e.message || String(e);
  } finally {
    if (s.frame) cancelAnimationFrame(s.frame);
    const snap = s.meter.snapshot();
    if (snap.ttftMs !== null || snap.totalTokens !== null) msg.stats = snap;
    if (!msg.reasoning) delete msg.reasoning;
    app.stream = null;
    c.updated = Date.now();
    await persist(c);
    if (app.convs.includes(c) || c === app.current) renderAll();
    announce(msg.error ? `Error: ${msg.error}` : msg.stopped ? 'Reply stopped' : 'Reply complete');
    refreshModels();
    if (c === app.current && !document.querySelector('.edit-box')) composer.focus();
  }
}

function onChunk(s, chunk) {
  if (chunk.usage) s.meter.setUsage(chunk.usage);
  const choice = chunk.choices && chunk.choices[0];
  const d = choice && choice.delta;
  if (d) {
    const reasoning = d.reasoning_content || d.reasoning || '';
    if (typeof d.content === 'string' && d.content) s.msg.text += d.content;
    if (typeof reasoning === 'string' && reasoning) s.msg.reasoning += reasoning;
    if (d.content || reasoning) s.meter.token(performance.now());
  }
  if (choice && choice.finish_reason) s.msg.finish = choice.finish_reason;
  if (Date.now() - s.saved > 2000) {
    s.saved = Date.now();
    persist(s.conv);
  }
  schedule(s);
}

// watchLoading says what the wait before the first token is: the model
// loading (per /api/ps) or the prompt being read.
async function watchLoading(s) {
  await sleep(400);
  while (app.stream === s && s.meter.tFirst === null) {
    let ps = null;
    try {
      ps = await api.running(s.ctrl.signal);
    } catch {
      return;
    }
    if (app.stream !== s || s.meter.tFirst !== null) return;
    if (ps) {
      const e = ps.find((p) => p.name === s.msg.model);
      if (!e || e.loading) s.waitText = `Loading ${s.msg.model}${e && e.progress !== null ? ` (${Math.round(e.progress * 100)}%)` : ''}…`;
      else s.waitText = 'Reading the prompt…';
      schedule(s);
    }
    await sleep(700);
  }
}

function stop() {
  if (app.stream) app.stream.ctrl.abort();
}

function regenerate() {
  if (app.stream) return;
  const c = app.current;
  while (c.messages.length && c.messages[c.messages.length - 1].role === 'assistant') c.messages.pop();
  if (!c.messages.length) return;
  generate(c);
}

function editAndResend(i, text) {
  if (app.stream) return;
  const c = app.current;
  const m = c.messages[i];
  if (!m || (!text.trim() && !(m.attachments || []).length)) return;
  c.messages = c.messages.slice(0, i + 1);
  c.messages[i] = { ...m, text: text.trim() };
  if (i === 0) c.title = conv.titleFrom(text);
  generate(c);
}

function openConv(id) {
  const c = app.convs.find((x) => x.id === id);
  if (!c) return;
  app.current = c;
  store.setPref('current', id);
  if (!c.model) c.model = picker.selected;
  picker.select(c.model);
  settings.show(c);
  modelStatus();
  clearNotice();
  renderAll();
  toggleSidebar(false);
  composer.focus();
}

function newChat() {
  if (app.current.messages.length) {
    app.current = conv.create(store.newID(), picker.selected || store.pref('model'));
    settings.show(app.current);
    clearNotice();
    renderAll();
  }
  toggleSidebar(false);
  composer.focus();
}

async function renameConv(id, title) {
  const c = app.convs.find((x) => x.id === id);
  if (!c) return;
  c.title = title;
  await app.db.put(c);
  renderAll();
  announce(`Renamed to ${title}`);
}

async function deleteConv(id) {
  const c = app.convs.find((x) => x.id === id);
  if (!c) return;
  c.deleted = true;
  if (app.stream && app.stream.conv === c) stop();
  await app.db.delete(id);
  app.convs = app.convs.filter((x) => x !== c);
  if (app.current === c) {
    app.current = app.convs[0] || conv.create(store.newID(), picker.selected);
    picker.select(app.current.model);
    settings.show(app.current);
  }
  renderAll();
  announce(`Deleted ${c.title}`);
}

function download(name, type, text) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = h('a', { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

function toggleSidebar(open) {
  const shell = document.querySelector('.app');
  const on = open === undefined ? !shell.classList.contains('sidebar-open') : open;
  shell.classList.toggle('sidebar-open', on);
  $('toggle-sidebar').setAttribute('aria-expanded', String(on));
  if (on) $('new-chat').focus();
}

function wire() {
  $('stop-button').addEventListener('click', stop);
  $('new-chat').addEventListener('click', newChat);
  $('toggle-sidebar').addEventListener('click', () => toggleSidebar());
  $('backdrop').addEventListener('click', () => toggleSidebar(false));
  $('settings-button').addEventListener('click', () => {
    const panel = $('settings');
    panel.hidden = !panel.hidden;
    $('settings-button').setAttribute('aria-expanded', String(!panel.hidden));
    if (!panel.hidden) $('system-prompt').focus();
  });
  $('export-json').addEventListener('click', () => download(conv.fileName(app.current, 'json'), 'application/json', JSON.stringify(app.current, null, 2)));
  $('export-md').addEventListener('click', () => download(conv.fileName(app.current, 'md'), 'text/markdown', conv.toMarkdown(app.current)));
  document.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape' || e.defaultPrevented) return;
    if (app.stream) {
      e.preventDefault();
      stop();
    } else if (document.querySelector('.app').classList.contains('sidebar-open')) toggleSidebar(false);
  });
}

async function init() {
  wire();
  app.db = await store.open();
  try {
    app.convs = await app.db.list();
  } catch (e) {
    notice(`Could not read saved conversations: ${e.message}`, 'error');
  }
  const id = store.pref('current');
  app.current = app.convs.find((c) => c.id === id) || app.convs[0] || conv.create(store.newID(), store.pref('model'));
  settings.show(app.current);
  renderAll();
  composer.focus();
  await loadModels();
  document.body.dataset.ready = 'true';
}

init();
