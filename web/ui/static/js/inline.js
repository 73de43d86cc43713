// Inline parses the inline Markdown of one block (code spans, emphasis,
// strikethrough, links, autolinks, bare URLs, $ math, line breaks) into the
// node tree described in markdown.js. Link targets other than http, https
// and mailto are dropped, keeping the link text.

function el(tag, attrs, children) {
  const n = { tag };
  if (attrs) n.attrs = attrs;
  if (children) n.children = children;
  return n;
}

const punct = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';
const urlRe = /^(?:https?:\/\/|mailto:)[^\s<>"\u0000-\u001f\u007f]*[^\s<>"'.,;:!?)\]*_~\u0000-\u001f\u007f]/i;

/** safeHref returns url when its scheme is http, https or mailto, else null. */
export function safeHref(url) {
  const u = String(url).trim();
  return /^(?:https?:\/\/|mailto:)[^\s]*$/i.test(u) && !/[\u0000-\u001f\u007f]/.test(u) ? u : null;
}

/** inline returns the inline nodes of text. */
export function inline(text, depth = 0) {
  const out = [];
  let buf = '';
  const flush = () => {
    if (buf) out.push(buf);
    buf = '';
  };
  const push = (node) => {
    flush();
    out.push(node);
  };
  const s = text;
  let i = 0;
  while (i < s.length) {
    const c = s[i];
    if (c === '\\' && i + 1 < s.length && punct.includes(s[i + 1])) {
      buf += s[i + 1];
      i += 2;
      continue;
    }
    if (c === '\n') {
      push(el('br'));
      i++;
      continue;
    }
    if (c === '`') {
      let n = 1;
      while (s[i + n] === '`') n++;
      const ticks = '`'.repeat(n);
      let j = s.indexOf(ticks, i + n);
      while (j !== -1 && s[j + n] === '`') j = s.indexOf(ticks, j + n + 1);
      if (j !== -1) {
        let code = s.slice(i + n, j).replace(/\n/g, ' ');
        if (code.length > 2 && code.startsWith(' ') && code.endsWith(' ')) code = code.slice(1, -1);
        push(el('code', null, [code]));
        i = j + n;
        continue;
      }
      buf += ticks;
      i += n;
      continue;
    }
    if (c === '$' && s[i + 1] !== '$' && s[i + 1] && !/\s/.test(s[i + 1])) {
      let j = i + 1;
      while (j < s.length && (s[j] !== '$' || s[j - 1] === '\\')) j++;
      if (j < s.length && !/\s/.test(s[j - 1]) && !/\d/.test(s[j + 1] || '') && !s.slice(i + 1, j).includes('\n')) {
        push({ tag: 'math', display: false, text: s.slice(i + 1, j) });
        i = j + 1;
        continue;
      }
    }
    if (c === '<') {
      const m = /^<((?:https?:\/\/|mailto:)[^\s<>]*)>/i.exec(s.slice(i));
      if (m && safeHref(m[1])) {
        push(el('a', { href: m[1] }, [m[1]]));
        i += m[0].length;
        continue;
      }
      const br = /^<br\s*\/?>/i.exec(s.slice(i));
      if (br) {
        push(el('br'));
        i += br[0].length;
        continue;
      }
    }
    if ((c === 'h' || c === 'H' || c === 'm' || c === 'M') && (i === 0 || /[\s(*_~]/.test(s[i - 1]))) {
      const m = urlRe.exec(s.slice(i));
      if (m && safeHref(m[0])) {
        push(el('a', { href: m[0] }, [m[0]]));
        i += m[0].length;
        continue;
      }
    }
    if (c === '!' && s[i + 1] === '[') {
      const l = link(s, i + 1, depth);
      if (l) {
        // Images are shown as links: loading them would be a request to
        // somewhere else.
        if (l.node.attrs) push(l.node);
        else {
          flush();
          out.push(...l.node.children);
        }
        i = l.end;
        continue;
      }
    }
    if (c === '[') {
      const l = link(s, i, depth);
      if (l) {
        if (l.node.attrs) push(l.node);
        else {
          flush();
          out.push(...l.node.children);
        }
        i = l.end;
        continue;
      }
    }
    if ((c === '*' || c === '_' || c === '~') && depth < 12) {
      const d = delimited(s, i, depth);
      if (d) {
        push(d.node);
        i = d.end;
        continue;
      }
    }
    buf += c;
    i++;
  }
  flush();
  return out;
}

// link parses [text](url "title") at s[i] === '['.
function link(s, i, depth) {
  let d = 0;
  let j = i;
  for (; j < s.length; j++) {
    if (s[j] === '\\') j++;
    else if (s[j] === '[') d++;
    else if (s[j] === ']' && --d === 0) break;
  }
  if (j >= s.length || s[j + 1] !== '(') return null;
  let p = 0;
  let k = j + 1;
  for (; k < s.length; k++) {
    if (s[k] === '(') p++;
    else if (s[k] === ')' && --p === 0) break;
    else if (s[k] === '\n') return null;
  }
  if (k >= s.length) return null;
  let dest = s.slice(j + 2, k).trim();
  const t = /^(\S+)\s+(?:"[^"]*"|'[^']*')$/.exec(dest);
  if (t) dest = t[1];
  if (dest.startsWith('<') && dest.endsWith('>')) dest = dest.slice(1, -1);
  const kids = inline(s.slice(i + 1, j), depth + 1);
  const href = safeHref(dest);
  return { node: href ? el('a', { href }, kids.filter((n) => typeof n === 'string' || n.tag !== 'a')) : { tag: 'a', children: kids }, end: k + 1 };
}

// delimited parses **strong**, __strong__, *em*, _em_ or ~~del~~ at s[i].
function delimited(s, i, depth) {
  const c = s[i];
  let n = 1;
  while (s[i + n] === c && n < 3) n++;
  if (c === '~' && n < 2) return null;
  if (c === '~') n = 2;
  const after = s[i + n];
  if (!after || /\s/.test(after)) return null;
  if (c === '_' && i > 0 && /[\p{L}\p{N}]/u.test(s[i - 1])) return null;
  const tries = c === '~' ? [2] : n === 3 ? [3, 2, 1] : [n];
  for (const len of tries) {
    const mark = c.repeat(len);
    let j = i + len;
    while ((j = s.indexOf(mark, j + 1)) !== -1) {
      if (/\s/.test(s[j - 1]) || s[j - 1] === '\\') continue;
      if (s[j + len] === c && len < 3) {
        // A longer run closes a longer opener; skip past it.
        while (s[j + len] === c) j++;
        continue;
      }
      if (c === '_' && /[\p{L}\p{N}]/u.test(s[j + len] || '')) continue;
      const inner = s.slice(i + len, j);
      if (!inner) break;
      const kids = inline(inner, depth + 1);
      let node;
      if (c === '~') node = el('del', null, kids);
      else if (len === 3) node = el('em', null, [el('strong', null, kids)]);
      else node = el(len === 2 ? 'strong' : 'em', null, kids);
      return { node, end: j + len };
    }
  }
  return null;
}
