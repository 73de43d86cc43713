// Panel is the model panel: the models on this machine (use one, delete
// one), a pull by name, and the catalog of models Hearth knows, filtered
// to what fits this machine, each with a pull button. A pull shows a
// progress bar with bytes, speed and time left, and can be cancelled (the
// server stops the download and keeps its partial files, so the next pull
// resumes). A server without a catalog (404) gets the local models and the
// pull by name only. On a first run, the panel and the empty conversation
// recommend the one catalog model that fits this machine best.

import * as api from './api.js';
import { humanBytes } from './attach.js';
import { badges } from './models.js';
import { OFFLINE, Rate, hubOffline, progressText } from './pull.js';
import { h } from './render.js';

/** STARTER is the id of the model built into hearth (never deleted). */
export const STARTER = 'hearth/starter';

/**
 * firstRun reports whether models (from /v1/models) hold nothing but the
 * built-in starter and the server's default: nobody has pulled a model yet.
 */
export function firstRun(models) {
  return !models.some((m) => m.id !== STARTER && !m.default);
}

/** fitsHere reports whether a catalog entry fits this machine (an entry with no verdict is not hidden). */
export function fitsHere(entry) {
  return !(entry.fit && entry.fit.status === "won't fit");
}

/** paramsText formats a parameter count: 3.2B, 600M. */
export function paramsText(n) {
  if (typeof n !== 'number' || !(n > 0)) return '';
  if (n >= 1e9) return `${(n / 1e9).toFixed(n < 1e10 ? 1 : 0).replace(/\.0$/, '')}B`;
  return `${Math.round(n / 1e6)}M`;
}

/** localID returns the id under which a catalog entry appears in models, or ''. */
export function localID(entry, models) {
  const names = [entry.repo, entry.name, ...(Array.isArray(entry.names) ? entry.names : [])].filter(Boolean);
  const m = models.find((x) => names.includes(x.id));
  return m ? m.id : '';
}

export class Panel {
  /**
   * @param {HTMLElement} section the (hidden) panel
   * @param {HTMLButtonElement} button the top bar's Models button
   * @param {{models: () => object[], onUse: (id: string) => void, onChanged: () => Promise<void>,
   *          onUnreachable: () => void, announce: (text: string) => void}} on
   * models returns the models on this machine (the picker's list);
   * onChanged reloads them after a pull or a delete.
   */
  constructor(section, button, on) {
    this.el = section;
    this.button = button;
    this.on = on;
    this.catalog = undefined; // undefined: not asked yet; null: the server has none
    this.showAll = false;
    this.pulling = null; // {name, ctrl, rate, bar, text}
    this.catalogError = '';

    this.nameInput = h('input', { id: 'pull-name', type: 'text', autocomplete: 'off', spellcheck: 'false', placeholder: 'llama3.2, or a Hugging Face repo: org/name' });
    this.pullButton = h('button', { type: 'submit', class: 'primary' }, 'Pull');
    const form = h('form', { class: 'pull-form', 'aria-label': 'Pull a model by name' },
      h('label', { for: 'pull-name' }, 'Pull a model by name'),
      h('div', { class: 'pull-row' }, this.nameInput, this.pullButton));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const name = this.nameInput.value.trim();
      if (name) this.pull(name);
    });
    this.recommendEl = h('div', { class: 'recommend', hidden: true });
    this.localEl = h('ul', { class: 'rows', id: 'local-models', 'aria-label': 'Models on this machine' });
    this.statusEl = h('div', { class: 'pull-status', id: 'pull-status', hidden: true });
    this.catalogEl = h('div', { class: 'catalog', id: 'catalog' });
    const close = h('button', { type: 'button', class: 'icon', 'aria-label': 'Close the model panel', onclick: () => this.toggle(false) }, '×');
    section.append(
      h('div', { class: 'panel-head' }, h('h2', { id: 'models-title' }, 'Models'), close),
      this.recommendEl,
      h('h3', null, 'On this machine'),
      this.localEl,
      h('h3', null, 'Get a model'),
      form,
      this.statusEl,
      this.catalogEl,
    );
    button.addEventListener('click', () => this.toggle());
  }

  isOpen() {
    return !this.el.hidden;
  }

  /** toggle opens or closes the panel (open: undefined flips it); opening refreshes the catalog. */
  toggle(open) {
    const on = open === undefined ? this.el.hidden : open;
    this.el.hidden = !on;
    this.button.setAttribute('aria-expanded', String(on));
    if (on) {
      this.paint();
      this.loadCatalog();
      (this.el.querySelector('.recommend:not([hidden]) button') || this.nameInput).focus();
    } else {
      this.button.focus();
    }
  }

  /** loadCatalog asks the server for its catalog and redraws. */
  async loadCatalog() {
    try {
      this.catalog = await api.catalog();
      this.catalogError = '';
    } catch (e) {
      if (e.unreachable) this.on.onUnreachable();
      this.catalogError = e.message;
    }
    this.paint();
  }

  /** recommended returns the catalog's recommended entry when it is not downloaded yet, or null. */
  recommended() {
    if (!Array.isArray(this.catalog)) return null;
    const r = this.catalog.find((m) => m.recommended);
    return r && !r.downloaded && !localID(r, this.on.models()) ? r : null;
  }

  /**
   * welcome returns what an empty conversation shows on a first run: the
   * recommended model with a pull button, or a pointer to the panel; null
   * once a model has been pulled.
   */
  welcome() {
    if (!firstRun(this.on.models())) return null;
    const r = this.recommended();
    const browse = h('button', { type: 'button', onclick: () => this.toggle(true) }, 'Browse models');
    if (!r) {
      return h('div', { class: 'welcome' },
        h('p', null, 'Only a small starter model is on this machine. For real answers, download a bigger model.'),
        h('p', { class: 'welcome-actions' }, browse));
    }
    const pull = h('button', { type: 'button', class: 'primary', disabled: !!this.pulling, 'aria-label': `Pull ${r.name}` }, `Pull ${r.name}`);
    pull.addEventListener('click', () => {
      this.toggle(true);
      this.pull(r.name);
    });
    return h('div', { class: 'welcome' },
      h('p', null, 'Only a small starter model is on this machine. For real answers, get the model that fits this machine best:'),
      this.summary(r),
      h('p', { class: 'welcome-actions' }, pull, browse));
  }

  // summary is a catalog entry's one-line description.
  summary(e) {
    const bits = [paramsText(e.parameters) && `${paramsText(e.parameters)} parameters`, e.quantization, humanBytes(e.size_bytes),
      e.context_length > 0 && `${e.context_length} tokens of context`].filter(Boolean);
    return h('p', { class: 'entry-summary' }, h('strong', null, e.name), e.repo && e.repo !== e.name ? ` (${e.repo})` : '', bits.length ? ` · ${bits.join(' · ')}` : '');
  }

  /** pull downloads name, showing its progress; one pull runs at a time. */
  async pull(name) {
    if (this.pulling) return;
    const p = { name, ctrl: new AbortController(), rate: new Rate(), bar: h('progress', { 'aria-label': `Pulling ${name}` }), text: h('span', { class: 'pull-text' }, progressText(null)) };
    this.pulling = p;
    const cancel = h('button', { type: 'button', class: 'danger', 'aria-label': `Cancel pulling ${name}`, onclick: () => p.ctrl.abort() }, 'Cancel');
    this.status('busy', h('div', { class: 'pull-line' }, h('span', { class: 'pull-name' }, `Pulling ${name}`), cancel), p.bar, p.text);
    this.paint();
    this.on.announce(`Pulling ${name}`);
    let done = false;
    try {
      await api.pull(name, { signal: p.ctrl.signal, onProgress: (line) => this.progress(p, line) });
      done = true;
    } catch (e) {
      if (e.name === 'AbortError') {
        this.status('info', `Cancelled the pull of ${name}. The files downloaded so far are kept: pulling it again resumes.`);
      } else if (e.unreachable) {
        this.status('error', e.message);
        this.on.onUnreachable();
      } else if (hubOffline(e.message)) {
        this.status('error', h('span', { title: e.message }, OFFLINE));
      } else {
        this.status('error', e.message);
      }
    } finally {
      this.pulling = null;
      this.button.textContent = 'Models';
    }
    if (done) {
      this.nameInput.value = '';
      await this.on.onChanged();
      await this.loadCatalog();
      const id = this.idOf(name);
      const use = id ? h('button', { type: 'button', onclick: () => this.on.onUse(id) }, `Use ${id}`) : null;
      this.status('ok', h('span', null, `Pulled ${name}.`), use);
    }
    this.paint();
    this.on.announce(this.statusEl.textContent);
  }

  // idOf is the local id of a model pulled as name.
  idOf(name) {
    const models = this.on.models();
    if (models.some((m) => m.id === name)) return name;
    const e = Array.isArray(this.catalog) ? this.catalog.find((x) => x.name === name || (x.names || []).includes(name) || x.repo === name) : null;
    return e ? localID(e, models) : '';
  }

  progress(p, line) {
    if (this.pulling !== p) return;
    const total = Number(line.total) || 0;
    const done = Number(line.completed) || 0;
    if (line.status === 'downloading') p.rate.add(performance.now(), done);
    if (total > 0) {
      p.bar.max = total;
      p.bar.value = Math.min(done, total);
    }
    p.text.textContent = progressText(line, p.rate.speed());
    this.button.textContent = total > 0 ? `Models · ${Math.floor((100 * done) / total)}%` : 'Models · pulling';
  }

  /** remove deletes a downloaded model after asking. */
  async remove(id) {
    if (!window.confirm(`Delete ${id}? Its files are removed from this machine.`)) return;
    try {
      await api.remove(id);
      this.status('ok', `Deleted ${id}.`);
      await this.on.onChanged();
      await this.loadCatalog();
    } catch (e) {
      if (e.unreachable) this.on.onUnreachable();
      this.status('error', e.message);
    }
    this.on.announce(this.statusEl.textContent);
    this.paint();
  }

  // status shows the pull's progress or the last outcome under the pull form.
  status(kind, ...kids) {
    this.statusEl.className = `pull-status pull-${kind}`;
    this.statusEl.replaceChildren(...kids.filter(Boolean));
    this.statusEl.hidden = false;
  }

  /** paint redraws the recommendation and both lists. */
  paint() {
    const models = this.on.models();
    const r = firstRun(models) ? this.recommended() : null;
    this.recommendEl.hidden = !r;
    if (r) {
      const pull = h('button', { type: 'button', class: 'primary', disabled: !!this.pulling, onclick: () => this.pull(r.name), 'aria-label': `Pull ${r.name}` }, `Pull ${r.name}`);
      this.recommendEl.replaceChildren(h('p', null, 'Recommended for this machine:'), this.summary(r), h('p', null, pull));
    }
    this.pullButton.disabled = !!this.pulling;
    this.localEl.replaceChildren(...models.map((m) => this.localRow(m)));
    if (!models.length) this.localEl.append(h('li', { class: 'row-empty' }, 'No models yet.'));
    this.paintCatalog(models);
  }

  localRow(m) {
    const use = h('button', { type: 'button', 'aria-label': `Use ${m.id}`, onclick: () => this.on.onUse(m.id) }, 'Use');
    const builtin = m.id === STARTER || m.default;
    const del = builtin ? null : h('button', { type: 'button', 'aria-label': `Delete ${m.id}`, onclick: () => this.remove(m.id) }, 'Delete');
    const size = humanBytes(m.size_bytes);
    return h('li', { class: 'row', 'data-id': m.id },
      h('div', { class: 'row-main' }, h('span', { class: 'model-id' }, m.id), size ? h('span', { class: 'row-size' }, size) : null,
        builtin ? h('span', { class: 'row-note' }, m.id === STARTER ? 'built in' : 'default') : null),
      h('span', { class: 'badges' }, badges(m)),
      h('span', { class: 'row-actions' }, use, del));
  }

  paintCatalog(models) {
    const c = this.catalog;
    if (this.catalogError) {
      this.catalogEl.replaceChildren(h('p', { class: 'hint' }, `The catalog could not be read: ${this.catalogError}`));
      return;
    }
    if (c === undefined) {
      this.catalogEl.replaceChildren();
      return;
    }
    if (c === null) {
      this.catalogEl.replaceChildren(h('p', { class: 'hint' }, 'This server has no model catalog: pull a model by its Hugging Face repo id above.'));
      return;
    }
    const hidden = c.filter((e) => !fitsHere(e)).length;
    const shown = this.showAll ? c : c.filter(fitsHere);
    const kids = [h('h3', null, 'Catalog')];
    if (hidden) {
      const box = h('input', { type: 'checkbox', id: 'show-all-models' });
      box.checked = this.showAll;
      box.addEventListener('change', () => {
        this.showAll = box.checked;
        this.paint();
        document.getElementById('show-all-models').focus();
      });
      kids.push(h('p', { class: 'catalog-filter' }, box, h('label', { for: 'show-all-models' }, ` Also show the ${hidden} that won’t fit this machine`)));
    }
    const list = h('ul', { class: 'rows', id: 'catalog-list', 'aria-label': 'Catalog' });
    for (const e of shown) list.append(this.catalogRow(e, models));
    if (!shown.length) list.append(h('li', { class: 'row-empty' }, 'Nothing in the catalog fits this machine.'));
    kids.push(list);
    this.catalogEl.replaceChildren(...kids);
  }

  catalogRow(e, models) {
    const id = localID(e, models);
    let action;
    if (e.downloaded || id) {
      action = [h('span', { class: 'badge downloaded' }, 'downloaded'), id ? h('button', { type: 'button', 'aria-label': `Use ${id}`, onclick: () => this.on.onUse(id) }, 'Use') : null];
    } else {
      action = h('button', { type: 'button', disabled: !!this.pulling, 'aria-label': `Pull ${e.name}`, onclick: () => this.pull(e.name) }, 'Pull');
    }
    const b = badges({ tier: e.tier, capabilities: e.capabilities, fit: e.fit }); // the context is in the summary
    if (e.recommended) b.unshift(h('span', { class: 'badge recommended', title: 'The best fit for this machine' }, 'recommended'));
    return h('li', { class: 'row', 'data-name': e.name }, h('div', { class: 'row-main' }, this.summary(e)), h('span', { class: 'badges' }, b), h('span', { class: 'row-actions' }, action));
  }
}
