// Settings is the per-conversation panel: the system prompt and the
// sampling settings (left empty, a setting is the server's default).

import { PARAMS } from './conv.js';
import { h } from './render.js';

export class Settings {
  /**
   * @param {HTMLElement} panel the settings section
   * @param {(change: {system?: string, params?: object}) => void} onChange
   */
  constructor(panel, onChange) {
    this.panel = panel;
    this.onChange = onChange;
    this.system = h('textarea', { id: 'system-prompt', rows: '3', placeholder: 'You are a helpful assistant.' });
    this.inputs = {};
    const grid = h('div', { class: 'params' });
    for (const p of PARAMS) {
      const id = `param-${p.name}`;
      const input = h('input', { id, type: 'number', min: String(p.min), max: String(p.max), step: String(p.step), placeholder: 'default', inputmode: p.int ? 'numeric' : 'decimal' });
      input.addEventListener('input', () => this.onChange({ params: this.params() }));
      this.inputs[p.name] = input;
      grid.append(h('div', { class: 'param' }, h('label', { for: id }, p.label), input));
    }
    this.system.addEventListener('input', () => this.onChange({ system: this.system.value }));
    panel.append(
      h('div', { class: 'field' }, h('label', { for: 'system-prompt' }, 'System prompt'), this.system),
      grid,
      h('p', { class: 'hint' }, 'Settings belong to this conversation. Empty fields use the server’s defaults.'),
    );
  }

  /** show fills the panel from a conversation. */
  show(conv) {
    this.system.value = conv.system || '';
    for (const p of PARAMS) {
      const v = conv.params ? conv.params[p.name] : undefined;
      this.inputs[p.name].value = v === undefined || v === null ? '' : String(v);
    }
  }

  params() {
    const out = {};
    for (const p of PARAMS) {
      const v = this.inputs[p.name].value.trim();
      if (v !== '') out[p.name] = v;
    }
    return out;
  }
}
