// Markdown parses the Markdown a model writes into a small tree of plain
// objects, which render.js turns into DOM nodes (createElement and text
// nodes only: raw HTML in the input is never interpreted, it stays text).
//
// A node is a string (text) or {tag, attrs, children}; two leaf kinds carry
// raw text instead of children: {tag: 'codeblock', lang, text, open} and
// {tag: 'math', display, text}. The subset: ATX headings, paragraphs (a
// newline is a line break, as chat output expects), fenced code (an
// unclosed fence runs to the end, so a streaming block renders as code at
// once), block quotes, nested ordered and bullet lists with task boxes,
// GFM pipe tables, thematic breaks, $$ math blocks; inline code, strong,
// emphasis, strikethrough, links (http, https and mailto only), autolinks,
// bare URLs and $ math. Math is shown as TeX source, not typeset.

import { inline, safeHref } from './inline.js';

export { safeHref };

/** Tags the tree may hold; render.js refuses anything else. */
export const TAGS = new Set([
  'p', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'blockquote', 'ul', 'ol', 'li', 'hr',
  'table', 'thead', 'tbody', 'tr', 'th', 'td', 'strong', 'em', 'del', 'code', 'a', 'br',
  'input', 'codeblock', 'math',
]);

/** Attributes the tree may hold, per tag. */
export const ATTRS = {
  a: ['href'],
  ol: ['start'],
  th: ['class'],
  td: ['class'],
  input: ['type', 'checked', 'disabled'],
};

const fenceRe = /^ {0,3}(`{3,}|~{3,})[ \t]*([^\s`]*)[^`]*$/;
const headingRe = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const hrRe = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const quoteRe = /^ {0,3}> ?/;
const itemRe = /^( {0,12})([-*+]|\d{1,9}[.)])([ \t]+|$)(.*)$/;
const delimRowRe = /^[ \t]*\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/;
const mathOpenRe = /^[ \t]*\$\$/;

/** parse returns the block nodes of src. It never throws. */
export function parse(src) {
  const lines = String(src).replace(/\r\n?/g, '\n').split('\n');
  return blocks(lines, 0);
}

// lead returns line with its leading tabs as spaces (tab stops of 4), for
// measuring structure; code keeps its tabs.
function lead(line) {
  const m = /^[ \t]+/.exec(line);
  if (!m || !m[0].includes('\t')) return line;
  let col = 0;
  for (const c of m[0]) col = c === '\t' ? col + 4 - (col % 4) : col + 1;
  return ' '.repeat(col) + line.slice(m[0].length);
}

// stripIndent removes up to n columns of leading whitespace.
function stripIndent(line, n) {
  let col = 0;
  let k = 0;
  while (k < line.length && col < n && (line[k] === ' ' || line[k] === '\t')) {
    const w = line[k] === '\t' ? 4 - (col % 4) : 1;
    if (col + w > n) return ' '.repeat(col + w - n) + line.slice(k + 1);
    col += w;
    k++;
  }
  return line.slice(k);
}

// fenceLang keeps a fence's info word when it looks like a language name.
function fenceLang(info) {
  const l = info.toLowerCase();
  return /^[a-z0-9_+#.-]{1,32}$/.test(l) ? l : '';
}

// depth bounds recursion (quotes in lists in quotes...) so hostile input
// cannot exhaust the stack; past it the rest is a paragraph.
function blocks(lines, depth) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lead(lines[i]);
    if (line.trim() === '') {
      i++;
      continue;
    }
    let m;
    if ((m = fenceRe.exec(line))) {
      const fence = m[1];
      const indent = line.length - line.trimStart().length;
      const body = [];
      let open = true;
      i++;
      while (i < lines.length) {
        const l = lead(lines[i]);
        const t = l.trim();
        if (t.length >= fence.length && t[0] === fence[0] && t === fence[0].repeat(t.length) && l.length - l.trimStart().length < 4) {
          open = false;
          i++;
          break;
        }
        body.push(stripIndent(lines[i], indent));
        i++;
      }
      if (open && body.length && body[body.length - 1].trim() === '') body.pop();
      out.push({ tag: 'codeblock', lang: fenceLang(m[2]), text: body.join('\n'), open });
      continue;
    }
    if (mathOpenRe.test(line)) {
      const first = line.trim().slice(2);
      if (first.endsWith('$$') && first.length >= 2) {
        out.push({ tag: 'math', display: true, text: first.slice(0, -2).trim() });
        i++;
        continue;
      }
      const body = first ? [first] : [];
      i++;
      while (i < lines.length && !lines[i].trimEnd().endsWith('$$')) body.push(lines[i++]);
      if (i < lines.length) body.push(lines[i++].trimEnd().slice(0, -2));
      out.push({ tag: 'math', display: true, text: body.join('\n').trim() });
      continue;
    }
    if ((m = headingRe.exec(line))) {
      out.push(el('h' + m[1].length, null, inline(m[2] || '')));
      i++;
      continue;
    }
    if (hrRe.test(line)) {
      out.push(el('hr'));
      i++;
      continue;
    }
    if (quoteRe.test(line) && depth < 16) {
      const body = [];
      while (i < lines.length && quoteRe.test(lead(lines[i]))) body.push(lead(lines[i++]).replace(quoteRe, ''));
      out.push(el('blockquote', null, blocks(body, depth + 1)));
      continue;
    }
    if (itemRe.test(line) && depth < 16) {
      i = list(lines, i, out, depth);
      continue;
    }
    if (i + 1 < lines.length && line.includes('|') && delimRowRe.test(lines[i + 1]) && lines[i + 1].includes('-')) {
      const head = cells(line);
      const aligns = cells(lines[i + 1]).map(alignOf);
      if (aligns.length === head.length) {
        i = table(lines, i + 2, head, aligns, out);
        continue;
      }
    }
    const para = [line.trim()];
    i++;
    while (i < lines.length && lines[i].trim() !== '' && !interrupts(lines, i)) para.push(lines[i++].trim());
    out.push(el('p', null, inline(para.join('\n'))));
  }
  return out;
}

function interrupts(lines, i) {
  const l = lead(lines[i]);
  if (fenceRe.test(l) || headingRe.test(l) || hrRe.test(l) || quoteRe.test(l) || mathOpenRe.test(l)) return true;
  const m = itemRe.exec(l);
  if (m && m[4].trim() !== '' && (!/^\d/.test(m[2]) || m[2].startsWith('1'))) return true;
  return i + 1 < lines.length && l.includes('|') && delimRowRe.test(lines[i + 1]) && lines[i + 1].includes('-');
}

// list consumes one list starting at lines[start] and returns the index
// after it.
function list(lines, start, out, depth) {
  const first = itemRe.exec(lead(lines[start]));
  const ordered = /^\d/.test(first[2]);
  const mark = first[2].slice(-1); // the bullet, or the delimiter after the number
  const baseIndent = first[1].length;
  // sibling reports whether m is the next item of this list; another
  // bullet character or delimiter starts a new list, as in CommonMark.
  const sibling = (m) => m && /^\d/.test(m[2]) === ordered && m[2].slice(-1) === mark && m[1].length <= baseIndent + 1 && m[1].length + 1 >= baseIndent;
  const items = [];
  let tight = true;
  let i = start;
  while (i < lines.length) {
    const m = itemRe.exec(lead(lines[i]));
    if (!sibling(m)) break;
    const markerEnd = m[1].length + m[2].length;
    const content = m[4] === '' ? markerEnd + 1 : markerEnd + Math.min(m[3].length, 4);
    const nestAt = Math.min(content, baseIndent + 2);
    const body = [m[4]];
    i++;
    let blankRun = 0;
    while (i < lines.length) {
      const l = lead(lines[i]);
      if (l.trim() === '') {
        blankRun++;
        body.push('');
        i++;
        continue;
      }
      const indent = l.length - l.trimStart().length;
      if (indent >= nestAt) {
        if (blankRun > 0) tight = tight && itemRe.test(l.trimStart());
        body.push(stripIndent(lines[i], Math.min(indent, content)));
        blankRun = 0;
        i++;
        continue;
      }
      if (blankRun === 0 && !itemRe.test(l) && !interrupts(lines, i)) {
        body.push(l.trim()); // lazy continuation of the item's paragraph
        i++;
        continue;
      }
      break;
    }
    while (body.length && body[body.length - 1] === '') body.pop();
    const next = i < lines.length && sibling(itemRe.exec(lead(lines[i])));
    if (blankRun > 0 && next) tight = false;
    items.push({ body });
    if (!next) break;
  }
  const node = el(ordered ? 'ol' : 'ul', null, []);
  if (ordered) {
    const n = parseInt(first[2], 10);
    if (n !== 1) node.attrs = { start: String(n) };
  }
  for (const it of items) {
    let kids = blocks(it.body, depth + 1);
    let box = null;
    if (kids.length && kids[0].tag === 'p' && typeof kids[0].children[0] === 'string') {
      const t = /^\[([ xX])\][ \t]+/.exec(kids[0].children[0]);
      if (t) {
        box = el('input', { type: 'checkbox', disabled: '' });
        if (t[1] !== ' ') box.attrs.checked = '';
        kids[0].children[0] = kids[0].children[0].slice(t[0].length);
      }
    }
    if (tight) kids = kids.flatMap((k) => (k.tag === 'p' ? k.children : [k]));
    node.children.push(el('li', null, box ? [box, ...kids] : kids));
  }
  out.push(node);
  return i;
}

function cells(line) {
  let s = line.trim();
  if (s.startsWith('|')) s = s.slice(1);
  if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
  const parts = [];
  let cur = '';
  let code = false;
  for (let k = 0; k < s.length; k++) {
    const c = s[k];
    if (c === '\\' && s[k + 1] === '|') {
      cur += '|';
      k++;
    } else if (c === '`') {
      code = !code;
      cur += c;
    } else if (c === '|' && !code) {
      parts.push(cur.trim());
      cur = '';
    } else cur += c;
  }
  parts.push(cur.trim());
  return parts;
}

function alignOf(c) {
  const l = c.startsWith(':');
  const r = c.endsWith(':');
  return l && r ? 'center' : r ? 'right' : l ? 'left' : '';
}

function table(lines, i, head, aligns, out) {
  const cell = (tag, text, k) => el(tag, aligns[k] ? { class: 'align-' + aligns[k] } : null, inline(text || ''));
  const rows = [];
  while (i < lines.length && lines[i].trim() !== '' && lines[i].includes('|')) {
    const cs = cells(lines[i++]);
    rows.push(el('tr', null, aligns.map((_, k) => cell('td', cs[k], k))));
  }
  const thead = el('thead', null, [el('tr', null, head.map((h, k) => cell('th', h, k)))]);
  out.push(el('table', null, rows.length ? [thead, el('tbody', null, rows)] : [thead]));
  return i;
}

function el(tag, attrs, children) {
  const n = { tag };
  if (attrs) n.attrs = attrs;
  if (children) n.children = children;
  return n;
}

const esc = (t) => String(t).replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]);

/**
 * toHTML serializes nodes to HTML text with the same allow-lists render.js
 * applies when it builds them into the DOM (code blocks highlighted by
 * highlight, when given). Tests compare it with goldens and fuzz it; the
 * page itself never parses HTML.
 */
export function toHTML(nodes, highlight) {
  let h = '';
  for (const n of nodes) {
    if (typeof n === 'string') {
      h += esc(n);
      continue;
    }
    if (!TAGS.has(n.tag)) throw new Error(`markdown: tag ${JSON.stringify(n.tag)} is not allowed`);
    if (n.tag === 'codeblock') {
      const toks = highlight ? highlight(n.text, n.lang) : [['', n.text]];
      const body = toks.map(([cls, t]) => (cls ? `<span class="tok-${cls}">${esc(t)}</span>` : esc(t))).join('');
      h += `<pre${n.lang ? ` data-lang="${esc(n.lang)}"` : ''}><code>${body}</code></pre>`;
      continue;
    }
    if (n.tag === 'math') {
      h += `<code class="math${n.display ? ' math-display' : ''}">${esc(n.text)}</code>`;
      continue;
    }
    const allowed = ATTRS[n.tag] || [];
    let a = '';
    for (const [k, v] of Object.entries(n.attrs || {})) {
      if (!allowed.includes(k)) throw new Error(`markdown: attribute ${k} on ${n.tag} is not allowed`);
      if (k === 'href' && !safeHref(v)) throw new Error(`markdown: href ${JSON.stringify(v)} is not safe`);
      a += v === '' ? ` ${k}` : ` ${k}="${esc(v)}"`;
    }
    if (n.tag === 'a' && n.attrs && n.attrs.href) a += ' rel="noopener noreferrer" target="_blank"';
    if (n.tag === 'br' || n.tag === 'hr' || n.tag === 'input') {
      h += `<${n.tag}${a}>`;
      continue;
    }
    h += `<${n.tag}${a}>${toHTML(n.children || [], highlight)}</${n.tag}>`;
  }
  return h;
}
