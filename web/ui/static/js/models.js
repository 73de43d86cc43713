// Models is the model picker: a button that opens a listbox of every model
// /v1/models lists, with its support tier, capability badges and RAM fit
// (the numbers on hover, and in the option's accessible name). Fields a
// server does not send are simply not shown.

import { humanBytes } from './attach.js';
import { h } from './render.js';

const TIER_HELP = {
  targeted: 'Targeted: a dedicated implementation for this model family',
  generic: 'Generic: runs on the universal decoder for its model type',
};

const FIT_HELP = {
  fits: 'Fits in memory',
  tight: 'Fits, with little memory to spare',
  "won't fit": 'Does not fit in memory; loading it will be refused',
};

/** fitText returns the hover text for a model's fit, or ''. */
export function fitText(fit) {
  if (!fit || typeof fit !== 'object') return '';
  const parts = [FIT_HELP[fit.status] || String(fit.status || '')];
  const need = humanBytes(fit.need_bytes);
  const avail = humanBytes(fit.available_bytes);
  if (need) parts.push(`needs ${need}`);
  if (avail) parts.push(`${avail} available`);
  return parts.filter(Boolean).join('; ');
}

/** badges returns the badge elements for a model. */
export function badges(m) {
  const out = [];
  if (typeof m.tier === 'string' && m.tier) out.push(h('span', { class: `badge tier tier-${m.tier.replace(/[^a-z]/g, '')}`, title: TIER_HELP[m.tier] || m.tier }, m.tier));
  for (const c of Array.isArray(m.capabilities) ? m.capabilities : []) {
    if (typeof c === 'string') out.push(h('span', { class: `badge cap cap-${c.replace(/[^a-z]/g, '')}`, title: `Accepts ${c === 'vision' ? 'images' : c}` }, c));
  }
  if (m.fit && typeof m.fit.status === 'string') {
    const help = fitText(m.fit);
    out.push(h('span', { class: `badge fit fit-${m.fit.status.replace(/[^a-z]/g, '')}`, title: help }, m.fit.status, h('span', { class: 'visually-hidden' }, ` (${help})`)));
  }
  if (m.loaded === true) out.push(h('span', { class: 'badge loaded', title: 'In memory now: answers start at once' }, 'loaded'));
  if (typeof m.context_length === 'number' && m.context_length > 0) out.push(h('span', { class: 'badge ctx', title: `Context window: ${m.context_length} tokens` }, `${fmtCtx(m.context_length)} ctx`));
  return out;
}

function fmtCtx(n) {
  return n >= 1024 && n % 1024 === 0 ? `${n / 1024}k` : String(n);
}

/** Picker drives the model button and its listbox. */
export class Picker {
  /**
   * @param {HTMLButtonElement} button
   * @param {HTMLUListElement} list
   * @param {(id: string) => void} onSelect
   */
  constructor(button, list, onSelect) {
    this.button = button;
    this.list = list;
    this.onSelect = onSelect;
    this.models = [];
    this.selected = '';
    this.active = -1;
    this.state = 'loading';
    button.addEventListener('click', () => (this.isOpen() ? this.close() : this.open()));
    button.addEventListener('keydown', (e) => {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        this.open();
      }
    });
    list.addEventListener('keydown', (e) => this.key(e));
    list.addEventListener('click', (e) => {
      const li = e.target.closest('[role=option]');
      if (li) this.choose(Number(li.dataset.index));
    });
    list.addEventListener('focusout', (e) => {
      if (!this.list.contains(e.relatedTarget) && e.relatedTarget !== this.button) this.close(false);
    });
    this.paint();
  }

  /**
   * setState shows loading ('loading'), a failure ('error', message), the
   * list ('ready'), or a server that does not answer ('offline': nothing
   * can be chosen, and no model is shown as loaded, since what the server
   * holds is unknown).
   */
  setState(state, message = '') {
    this.state = state;
    this.message = message;
    if (state === 'offline') {
      this.close(false);
      this.models = this.models.map((m) => ({ ...m, loaded: false }));
    }
    this.paint();
  }

  /** setModels replaces the list; selected is the id to show as chosen. */
  setModels(models, selected) {
    this.models = models;
    this.selected = selected || '';
    this.state = 'ready';
    this.paint();
  }

  /** select shows id as chosen without calling onSelect. */
  select(id) {
    this.selected = id || '';
    this.paint();
  }

  /** model returns the chosen model's entry, or null. */
  model() {
    return this.models.find((m) => m.id === this.selected) || null;
  }

  isOpen() {
    return !this.list.hidden;
  }

  open() {
    if (this.state !== 'ready' || !this.models.length) return;
    this.list.hidden = false;
    this.button.setAttribute('aria-expanded', 'true');
    this.active = Math.max(0, this.models.findIndex((m) => m.id === this.selected));
    this.paintActive();
    this.list.focus();
  }

  close(refocus = true) {
    if (this.list.hidden) return;
    this.list.hidden = true;
    this.button.setAttribute('aria-expanded', 'false');
    if (refocus) this.button.focus();
  }

  choose(i) {
    const m = this.models[i];
    if (!m) return;
    this.selected = m.id;
    this.close();
    this.paint();
    this.onSelect(m.id);
  }

  key(e) {
    const n = this.models.length;
    const moves = { ArrowDown: 1, ArrowUp: -1, Home: -n, End: n, PageDown: 5, PageUp: -5 };
    if (e.key in moves) {
      e.preventDefault();
      this.active = Math.min(n - 1, Math.max(0, this.active + moves[e.key]));
      this.paintActive();
    } else if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      this.choose(this.active);
    } else if (e.key === 'Escape' || e.key === 'Tab') {
      if (e.key === 'Escape') {
        e.preventDefault();
        e.stopPropagation();
      }
      this.close(e.key === 'Escape');
    }
  }

  paintActive() {
    for (const li of this.list.children) {
      const on = Number(li.dataset.index) === this.active;
      li.classList.toggle('active', on);
      if (on) {
        this.list.setAttribute('aria-activedescendant', li.id);
        li.scrollIntoView({ block: 'nearest' });
      }
    }
  }

  paint() {
    const b = this.button;
    b.replaceChildren();
    b.disabled = this.state !== 'ready' || !this.models.length;
    b.classList.toggle('loading', this.state === 'loading');
    if (this.state === 'loading') {
      b.append(h('span', { class: 'spinner', 'aria-hidden': 'true' }), 'Loading models…');
    } else if (this.state === 'error') {
      b.append('Models unavailable');
    } else if (this.state === 'offline') {
      if (this.selected) b.append(h('span', { class: 'model-id' }, this.selected));
      b.append(h('span', { class: 'badge offline', title: 'Hearth does not answer: what it has loaded is unknown' }, 'server unreachable'));
    } else if (!this.models.length) {
      b.append('No models installed');
    } else {
      const m = this.model();
      b.append(h('span', { class: 'model-id' }, this.selected || 'Choose a model'));
      if (m) b.append(h('span', { class: 'badges' }, badges(m)));
      else if (this.selected) b.append(h('span', { class: 'badge fit fit-wontfit' }, 'not available'));
      b.append(h('span', { class: 'chev', 'aria-hidden': 'true' }, '▾'));
    }
    this.list.replaceChildren(
      ...this.models.map((m, i) =>
        h(
          'li',
          { role: 'option', id: `model-opt-${i}`, 'data-index': String(i), 'data-id': m.id, 'aria-selected': String(m.id === this.selected) },
          h('span', { class: 'model-id' }, m.id),
          h('span', { class: 'badges' }, badges(m)),
        )),
    );
  }
}
