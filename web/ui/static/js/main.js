// Main wires the chat page together: conversations (stored in the
// browser), the model picker and the model panel, the composer, streaming
// replies with stop, regenerate and edit-and-resend, live stats, the
// keyboard, and what the page does while the server does not answer.

import * as api from './api.js';
import { missing, missingMessage } from './attach.js';
import * as conv from './conv.js';
import { Composer } from './composer.js';
import { Health } from './health.js';
import { Picker, fitText } from './models.js';
import { Panel, firstRun } from './panel.js';
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
  onRemove: removeMessage,
  welcome: () => (picker.state === 'ready' ? panel.welcome() : null),
  contextLength: (id) => {
    const m = picker.models.find((x) => x.id === id);
    return m && m.context_length;
  },
});
const composer = new Composer(
  { form: $('composer'), input: $('composer-input'), fileInput: $('file-input'), attachButton: $('attach-button'), recordButton: $('record-button'), tray: $('attachments'), overlay: $('drop-overlay') },
  { onSubmit: () => send(false), onError: (msg) => notice(msg, 'error'), onChange: () => attachWarning() },
);
const panel = new Panel($('models-panel'), $('models-button'), {
  models: () => (picker.state === 'ready' || picker.state === 'offline' ? picker.models : []),
  onUse: (id) => {
    picker.select(id);
    selectModel(id);
    composer.focus();
  },
  onChanged: async () => {
    await loadModels();
    renderAll();
  },
  onUnreachable: () => health.lost(),
  announce,
});
const health = new Health({
  check: () => api.health(AbortSignal.timeout(5000)),
  onDown: serverDown,
  onUp: serverUp,
  visible: () => document.visibilityState === 'visible',
});
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
  delete n.dataset.offline;
  delete n.dataset.attach;
  const buttons = actions.map((a) => h('button', { type: 'button', class: a.primary ? 'primary' : '', onclick: a.run }, a.label));
  const close = h('button', { type: 'button', class: 'icon', 'aria-label': 'Dismiss', onclick: clearNotice }, '×');
  n.replaceChildren(h('span', { class: 'notice-text' }, text), ...buttons, close);
  n.hidden = false;
}

function clearNotice() {
  $('notice').hidden = true;
  $('notice').replaceChildren();
  delete $('notice').dataset.attach;
}

// attachWarning says, as soon as something is attached, that the chosen
// model cannot take it (from the capabilities /v1/models lists), and
// takes the warning back once the attachment is removed or a model that
// takes it is chosen. Sending anyway stays possible: the send asks first.
function attachWarning() {
  const n = $('notice');
  const lack = missing(composer.attachments, picker.model());
  if (!lack.length) {
    if (n.dataset.attach) clearNotice();
    return;
  }
  const text = missingMessage(lack, app.current.model);
  if (n.dataset.attach === text && !n.hidden) return;
  notice(text, 'warn');
  n.dataset.attach = text;
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
    health.ok();
    modelStatus();
    statsBar();
    panel.paint();
  } catch (e) {
    if (e.unreachable) {
      health.lost();
      return;
    }
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
    panel.paint();
  } catch (e) {
    // The next full load will say what is wrong.
    if (e.unreachable) health.lost();
  }
}

// serverDown shows that the server does not answer: a banner that says so
// (the page keeps asking, with backoff), and no model shown as loaded.
function serverDown() {
  const try_ = h('button', { type: 'button', onclick: () => health.retry() }, 'Try now');
  $('offline').replaceChildren(
    h('span', { class: 'offline-text' }, h('strong', null, 'Hearth is not running'), `, or this page cannot reach it at ${location.origin}. Start Hearth again (hearth serve, or the menu-bar app): this page reconnects by itself, and your conversations are kept.`),
    try_,
  );
  $('offline').hidden = false;
  picker.setState('offline');
  modelStatus();
  panel.paint();
  announce('Lost the connection to Hearth');
}

// serverUp is the server answering again: the banner goes, and the model
// list (what is loaded, too) is asked afresh.
async function serverUp() {
  $('offline').hidden = true;
  $('offline').replaceChildren();
  if ($('notice').dataset.offline) clearNotice();
  announce('Reconnected to Hearth');
  await loadModels();
  if (panel.isOpen()) panel.loadCatalog();
  renderAll();
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
  attachWarning();
  announce(`Model ${id} selected`);
}

function send(force) {
  if (app.stream) return;
  const text = composer.text.trim();
  const atts = composer.attachments;
  if (!text && !atts.length) return;
  if (composer.busy) {
    notice(composer.recording ? 'Stop the recording first (the red button); it is then attached to the message.' : 'Still reading the attachments; send again in a moment.', 'info');
    return;
  }
  const c = app.current;
  if (health.down) {
    notice('Hearth is not answering, so nothing was sent; your message stays in the box until it is back.', 'error', [{ label: 'Try now', run: () => health.retry() }]);
    $('notice').dataset.offline = 'true';
    return;
  }
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
  // The message answered is sent now, even if it was refused before.
  const asked = c.messages[c.messages.length - 1];
  if (asked) delete asked.rejected;
  const msg = { id: store.newID(), role: 'assistant', text: '', reasoning: '', model: c.model };
  c.messages.push(msg);
  c.updated = Date.now();
  const s = { conv: c, msg, ctrl: new AbortController(), meter: new Meter(performance.now()), waitText: '', frame: 0, saved: Date.now() };
  app.stream = s;
  await persist(c);
  renderAll();
  watchLoading(s);
  const ids = conv.sources(c, c.messages.length - 2);
  let again = false;
  try {
    await api.chat(conv.request(c, c.messages.length - 2), { signal: s.ctrl.signal, onChunk: (ch) => onChunk(s, ch) });
    health.ok();
  } catch (e) {
    if (e.name === 'AbortError') msg.stopped = true;
    else if (e.unreachable) {
      msg.error = e.message;
      health.lost();
    } else again = refused(c, msg, e, ids, asked && asked.id);
  } finally {
    if (s.frame) cancelAnimationFrame(s.frame);
    const snap = s.meter.snapshot();
    if (snap.ttftMs !== null || snap.totalTokens !== null) msg.stats = snap;
    if (!msg.reasoning) delete msg.reasoning;
    app.stream = null;
    c.updated = Date.now();
    await persist(c);
    if (app.convs.includes(c) || c === app.current) renderAll();
    const rejected = asked && asked.rejected;
    if (!again) {
      announce(rejected ? `Not sent to the model: ${rejected}` : msg.error ? `Error: ${msg.error}` : msg.stopped ? 'Reply stopped' : 'Reply complete');
      refreshModels();
      if (c === app.current && !document.querySelector('.edit-box')) composer.focus();
    }
  }
  // An earlier message was refused: it is left out now, so ask again.
  if (again && !c.deleted) await generate(c);
}

// refused records a failed request. When the server refused a message
// (the model cannot take it), that message is marked and kept out of every
// later request, and the empty reply goes: the mark says why. It returns
// true when the refused message is an earlier one (say, an image sent
// before the conversation moved to a text-only model, or by a page without
// this fix), so the message just sent can go again without it.
function refused(c, msg, e, ids, askedID) {
  const id = conv.blame(e, ids, askedID);
  const m = id && c.messages.find((x) => x.id === id);
  if (!m || msg.text || msg.reasoning) {
    msg.error = e.message || String(e);
    return false;
  }
  m.rejected = e.message || String(e);
  c.messages = c.messages.filter((x) => x !== msg);
  return m.id !== askedID;
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
  delete c.messages[i].rejected;
  if (i === 0) c.title = conv.titleFrom(text);
  generate(c);
}

// removeMessage deletes message i of the open conversation, with the failed
// or empty replies that follow it.
function removeMessage(i) {
  if (app.stream) return;
  const c = app.current;
  if (!c.messages[i]) return;
  let end = i + 1;
  while (end < c.messages.length && c.messages[end].role === 'assistant' && (c.messages[end].error || !c.messages[end].text)) end++;
  c.messages.splice(i, end - i);
  c.updated = Date.now();
  if (c.messages.length) persist(c);
  else {
    // Nothing is left: the conversation is new again, and unsaved.
    c.title = 'New chat';
    app.convs = app.convs.filter((x) => x !== c);
    app.db.delete(c.id).catch((e) => notice(`Could not save the conversation: ${e.message}`, 'error'));
  }
  renderAll();
  announce('Message removed');
  composer.focus();
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
    } else if (panel.isOpen() && $('models-panel').contains(document.activeElement)) {
      e.preventDefault();
      panel.toggle(false);
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
  health.start();
  // A first run recommends a model in the empty conversation: that needs the catalog.
  if (picker.state === 'ready' && firstRun(picker.models)) {
    await panel.loadCatalog();
    renderAll();
  }
  document.body.dataset.ready = 'true';
}

init();
