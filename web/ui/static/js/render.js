// Render builds DOM from markdown.js trees with createElement and text
// nodes only, so no model output is ever parsed as HTML. Code blocks get a
// language label, highlighting and a copy button.

import { ATTRS, TAGS, parse, safeHref } from './markdown.js';
import { highlight, language } from './highlight.js';

/** h creates an element: h('button', {class: 'x', onclick: f}, 'text', child). */
export function h(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    e.append(typeof kid === 'string' ? document.createTextNode(kid) : kid);
  }
  return e;
}

const ICONS = {
  pencil: 'M3 17.25V21h3.75L17.8 9.94l-3.75-3.75L3 17.25zm17.7-10.2a1 1 0 0 0 0-1.41l-2.34-2.34a1 1 0 0 0-1.41 0l-1.83 1.83 3.75 3.75 1.83-1.83z',
  trash: 'M6 19a2 2 0 0 0 2 2h8a2 2 0 0 0 2-2V7H6v12zM19 4h-3.5l-1-1h-5l-1 1H5v2h14V4z',
};

/** icon returns a small decorative SVG icon (the button carries the label). */
export function icon(name) {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('width', '15');
  svg.setAttribute('height', '15');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('focusable', 'false');
  const path = document.createElementNS(ns, 'path');
  path.setAttribute('d', ICONS[name]);
  path.setAttribute('fill', 'currentColor');
  svg.append(path);
  return svg;
}

/** copyText puts text on the clipboard. */
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const ta = h('textarea', { class: 'clip', 'aria-hidden': 'true' }, text);
    document.body.append(ta);
    ta.select();
    const ok = document.execCommand('copy');
    ta.remove();
    return ok;
  }
}

/** copyButton returns a button that copies what get() returns. */
export function copyButton(get, label = 'Copy') {
  const b = h('button', { type: 'button', class: 'copy', 'aria-label': label === 'Copy' ? 'Copy code' : label }, 'Copy');
  b.addEventListener('click', async () => {
    const ok = await copyText(get());
    b.textContent = ok ? 'Copied' : 'Copy failed';
    setTimeout(() => {
      b.textContent = 'Copy';
    }, 1500);
  });
  return b;
}

function codeBlock(n) {
  const code = h('code');
  for (const [cls, t] of highlight(n.text, n.lang)) code.append(cls ? h('span', { class: 'tok-' + cls }, t) : document.createTextNode(t));
  const label = n.lang || 'text';
  const pre = h('pre', { 'data-lang': language(n.lang) || null, tabindex: '0', 'aria-label': `${label} code` }, code);
  return h('div', { class: 'codeblock' }, h('div', { class: 'codebar' }, h('span', { class: 'lang' }, label), copyButton(() => n.text)), pre);
}

/** build appends the DOM for nodes to parent. */
export function build(parent, nodes) {
  for (const n of nodes) {
    if (typeof n === 'string') {
      parent.append(document.createTextNode(n));
      continue;
    }
    if (!TAGS.has(n.tag)) continue;
    if (n.tag === 'codeblock') {
      parent.append(codeBlock(n));
      continue;
    }
    if (n.tag === 'math') {
      parent.append(h('code', { class: n.display ? 'math math-display' : 'math', title: 'TeX' }, n.text));
      continue;
    }
    const e = document.createElement(n.tag);
    const allowed = ATTRS[n.tag] || [];
    for (const [k, v] of Object.entries(n.attrs || {})) {
      if (!allowed.includes(k)) continue;
      if (k === 'href' && !safeHref(v)) continue;
      e.setAttribute(k, v);
    }
    if (n.tag === 'a' && e.hasAttribute('href')) {
      e.rel = 'noopener noreferrer';
      e.target = '_blank';
    }
    if (n.tag === 'table') {
      const wrap = h('div', { class: 'table-wrap', tabindex: '0' }, e);
      build(e, n.children || []);
      parent.append(wrap);
      continue;
    }
    build(e, n.children || []);
    parent.append(e);
  }
}

/** markdown replaces el's content with text rendered as Markdown. */
export function markdown(el, text) {
  const frag = document.createDocumentFragment();
  build(frag, parse(text));
  el.replaceChildren(frag);
}
