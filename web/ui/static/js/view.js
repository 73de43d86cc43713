// View draws a conversation's messages: Markdown answers with a
// collapsible thinking section, the user's attachments as thumbnails,
// video and audio players, errors verbatim, per-reply stats and the message actions
// (copy, edit and resend, regenerate). A message the model could not take
// is marked, with buttons to remove it or send it again.

import { copyButton, h, markdown } from './render.js';
import { format } from './stats.js';
import { split } from './think.js';

function media(attachments) {
  if (!attachments || !attachments.length) return null;
  return h(
    'div',
    { class: 'msg-media' },
    attachments.map((a) => {
      if (a.kind === 'image') return h('figure', { class: 'att' }, h('img', { src: a.data, alt: a.name, loading: 'lazy' }), h('figcaption', null, a.name));
      if (a.kind === 'video') return h('figure', { class: 'att att-video' }, h('video', { controls: true, preload: 'metadata', src: a.data, 'aria-label': a.name }), h('figcaption', null, a.name));
      return h('figure', { class: 'att att-audio' }, h('audio', { controls: true, src: a.data, 'aria-label': a.name }), h('figcaption', null, a.name));
    }),
  );
}

/**
 * View renders into a container. Handlers: onEdit(index, text),
 * onRegenerate(), onRemove(index), contextLength() for the stats line, and
 * welcome() for what an empty conversation shows besides the prompt to
 * start (or null).
 */
export class View {
  constructor(container, handlers) {
    this.el = container;
    this.on = handlers;
    this.live = null; // {msg, thinking, body, stats, wait} of the reply streaming here
  }

  /** render redraws every message of conv; streamingMsg is the reply in progress, if any. */
  render(conv, streamingMsg) {
    const stick = this.nearBottom();
    this.live = null;
    const kids = [];
    if (!conv.messages.length) {
      const welcome = this.on.welcome ? this.on.welcome() : null;
      kids.push(h('div', { class: 'empty' }, h('p', { class: 'empty-title' }, 'Start a conversation'), h('p', null, 'Type a message below, or drop images and audio anywhere on the page.'), welcome));
    }
    const last = conv.messages.length - 1;
    conv.messages.forEach((m, i) => {
      kids.push(m.role === 'user' ? this.user(m, i, !!streamingMsg) : this.assistant(m, i, m === streamingMsg, i === last && !streamingMsg));
    });
    this.el.replaceChildren(...kids);
    if (stick || streamingMsg) this.scroll();
  }

  nearBottom() {
    return this.el.scrollHeight - this.el.scrollTop - this.el.clientHeight < 80;
  }

  scroll() {
    this.el.scrollTop = this.el.scrollHeight;
  }

  user(m, i, busy) {
    const body = h('div', { class: 'msg-body' });
    body.textContent = m.text;
    const art = h('article', { class: `msg msg-user${m.rejected ? ' rejected' : ''}`, 'data-id': m.id, 'aria-label': 'You' }, h('div', { class: 'msg-role' }, 'You'), media(m.attachments), body);
    const edit = h('button', { type: 'button', class: 'act', disabled: busy, 'aria-label': 'Edit and resend this message' }, 'Edit');
    edit.addEventListener('click', () => this.edit(art, body, m, i));
    const actions = h('span', { class: 'msg-actions' }, copyButton(() => m.text, 'Copy message'), edit);
    if (m.rejected) {
      art.append(h('p', { class: 'msg-rejected' }, h('strong', null, 'Not sent to the model: '), m.rejected));
      actions.append(
        h('button', { type: 'button', class: 'act', disabled: busy, 'aria-label': 'Send this message again', onclick: () => this.on.onEdit(i, m.text) }, 'Send again'),
        h('button', { type: 'button', class: 'act', disabled: busy, 'aria-label': 'Remove this message', onclick: () => this.on.onRemove(i) }, 'Remove'),
      );
    }
    art.append(h('div', { class: 'msg-foot' }, actions));
    return art;
  }

  edit(art, body, m, i) {
    const ta = h('textarea', { class: 'edit-box', 'aria-label': 'Edit message', rows: '3' });
    ta.value = m.text;
    const save = h('button', { type: 'button', class: 'primary' }, 'Save and send');
    const cancel = h('button', { type: 'button' }, 'Cancel');
    const form = h('div', { class: 'edit' }, ta, h('div', { class: 'edit-actions' }, save, cancel));
    const foot = art.querySelector('.msg-foot');
    body.replaceWith(form);
    foot.hidden = true;
    const done = () => {
      form.replaceWith(body);
      foot.hidden = false;
    };
    save.addEventListener('click', () => this.on.onEdit(i, ta.value));
    cancel.addEventListener('click', () => {
      done();
      art.querySelector('.act').focus();
    });
    ta.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        this.on.onEdit(i, ta.value);
      } else if (e.key === 'Escape') {
        e.preventDefault();
        e.stopPropagation();
        cancel.click();
      }
    });
    ta.focus();
    ta.setSelectionRange(ta.value.length, ta.value.length);
  }

  assistant(m, i, streaming, isLast) {
    const thinkBody = h('div', { class: 'md think-body' });
    const thinking = h('details', { class: 'thinking', hidden: true }, h('summary', null, 'Thinking'), thinkBody);
    const body = h('div', { class: 'msg-body md' });
    const stats = h('span', { class: 'msg-stats' });
    const wait = h('div', { class: 'wait', hidden: true, role: 'status' }, h('span', { class: 'dots', 'aria-hidden': 'true' }, h('i'), h('i'), h('i')), h('span', { class: 'wait-text' }, 'Waiting for the model…'));
    const actions = h('span', { class: 'msg-actions' });
    if (!streaming) {
      actions.append(copyButton(() => split(m.text, m.reasoning).answer.trim(), 'Copy reply'));
      if (isLast) actions.append(h('button', { type: 'button', class: 'act', onclick: () => this.on.onRegenerate(), 'aria-label': 'Regenerate this reply' }, 'Regenerate'));
    }
    const art = h(
      'article',
      { class: 'msg msg-assistant', 'data-id': m.id, 'aria-label': `Reply from ${m.model || 'the model'}`, 'aria-busy': streaming ? 'true' : null },
      h('div', { class: 'msg-role' }, m.model || 'Assistant'),
      thinking,
      body,
      wait,
    );
    if (m.error) art.append(h('p', { class: 'msg-error', role: 'alert' }, m.error));
    if (m.stopped) art.append(h('p', { class: 'msg-note' }, 'Stopped.'));
    else if (m.finish === 'length' && !streaming) art.append(h('p', { class: 'msg-note' }, 'Cut off: the reply reached its token limit or filled the context.'));
    art.append(h('div', { class: 'msg-foot' }, stats, actions));
    const live = { msg: m, art, thinking, thinkBody, body, stats, wait, auto: false };
    this.paint(live, streaming);
    if (streaming) this.live = live;
    return art;
  }

  /** update redraws the streaming reply in place (call it once per frame at most). */
  update(meterSnapshot, waitText) {
    const l = this.live;
    if (!l) return;
    const stick = this.nearBottom();
    this.paint(l, true, meterSnapshot, waitText);
    if (stick) this.scroll();
  }

  paint(l, streaming, snap, waitText) {
    const m = l.msg;
    const { thinking, answer, thinkingOpen } = split(m.text, m.reasoning);
    if (thinking !== null) {
      l.thinking.hidden = false;
      markdown(l.thinkBody, thinking);
      const summary = l.thinking.querySelector('summary');
      summary.textContent = streaming && thinkingOpen ? 'Thinking…' : 'Thinking';
      if (streaming && thinkingOpen && !l.auto) {
        l.thinking.open = true;
        l.auto = true;
      } else if (streaming && !thinkingOpen && l.auto === true) {
        l.thinking.open = false;
        l.auto = 'closed';
      }
    }
    markdown(l.body, answer);
    const started = m.text !== '' || (m.reasoning || '') !== '';
    l.wait.hidden = !streaming || started;
    if (waitText) l.wait.querySelector('.wait-text').textContent = waitText;
    const s = snap || m.stats;
    l.stats.textContent = s ? format(s, this.on.contextLength(m.model)) : '';
  }
}
