// Sidebar lists the saved conversations, newest first: open one, rename it
// in place, delete it.

import { h, icon } from './render.js';

export class Sidebar {
  /**
   * @param {HTMLUListElement} list
   * @param {{onOpen: (id) => void, onRename: (id, title) => void, onDelete: (id) => void}} on
   */
  constructor(list, on) {
    this.list = list;
    this.on = on;
  }

  /** render draws convs, marking currentID. */
  render(convs, currentID, streamingID) {
    this.list.replaceChildren(
      ...convs.map((c) => {
        const open = h('button', { type: 'button', class: 'conv-open', 'aria-current': c.id === currentID ? 'page' : null, title: c.title }, c.title);
        if (c.id === streamingID) open.append(h('span', { class: 'conv-live', 'aria-label': '(replying)' }, ' ●'));
        open.addEventListener('click', () => this.on.onOpen(c.id));
        const rename = h('button', { type: 'button', class: 'icon', 'aria-label': `Rename “${c.title}”`, title: 'Rename' }, icon('pencil'));
        const del = h('button', { type: 'button', class: 'icon', 'aria-label': `Delete “${c.title}”`, title: 'Delete' }, icon('trash'));
        const li = h('li', { class: 'conv', 'data-id': c.id }, open, rename, del);
        rename.addEventListener('click', () => this.rename(li, open, c));
        del.addEventListener('click', () => {
          if (window.confirm(`Delete “${c.title}”? This cannot be undone.`)) this.on.onDelete(c.id);
        });
        return li;
      }),
    );
  }

  rename(li, open, c) {
    const input = h('input', { type: 'text', class: 'conv-rename', 'aria-label': 'Conversation name', maxlength: '120' });
    input.value = c.title;
    open.replaceWith(input);
    let done = false;
    const finish = (save) => {
      if (done) return;
      done = true;
      const t = input.value.trim();
      if (save && t && t !== c.title) this.on.onRename(c.id, t);
      else {
        input.replaceWith(open);
        open.focus();
      }
    };
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        e.preventDefault();
        finish(true);
      } else if (e.key === 'Escape') {
        e.preventDefault();
        e.stopPropagation();
        finish(false);
      }
    });
    input.addEventListener('blur', () => finish(true));
    input.focus();
    input.select();
  }
}
