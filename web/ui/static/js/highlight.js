// Highlight splits source code into tokens for colouring: comments,
// strings, numbers, keywords, literals and called names. It is a lexer per
// language family, not a parser; an unknown language comes back as one
// plain token. The tokens' texts always concatenate to the input.

const words = (s) => new Set(s.split(' '));

const C_LIKE = {
  line: ['//'],
  block: [['/*', '*/']],
  strings: ['"', "'"],
};

const LANGS = {
  js: {
    ...C_LIKE,
    strings: ['"', "'", '`'],
    keywords: words('async await break case catch class const continue debugger default delete do else export extends finally for from function if import in instanceof let new of return static super switch this throw try typeof var void while with yield as interface type enum implements private public protected readonly declare namespace keyof'),
    literals: words('true false null undefined NaN Infinity'),
  },
  go: {
    ...C_LIKE,
    strings: ['"', "'", '`'],
    keywords: words('break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var'),
    literals: words('true false nil iota'),
  },
  rust: {
    ...C_LIKE,
    strings: ['"'],
    keywords: words('as async await break const continue crate dyn else enum extern fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait type unsafe use where while'),
    literals: words('true false None Some Ok Err'),
  },
  c: {
    ...C_LIKE,
    line: ['//', '#'],
    keywords: words('auto break case char class const constexpr continue default delete do double else enum extern float for goto if inline int long namespace new private protected public register return short signed sizeof static struct switch template this throw try typedef typename union unsigned using virtual void volatile while bool final override package import extends implements interface throws synchronized boolean byte var val fun when object'),
    literals: words('true false NULL nullptr null'),
  },
  python: {
    line: ['#'],
    block: [],
    strings: ['"""', "'''", '"', "'"],
    keywords: words('and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield match case'),
    literals: words('True False None self'),
  },
  sh: {
    line: ['#'],
    block: [],
    strings: ['"', "'"],
    keywords: words('if then else elif fi for while until do done case esac in function return local export set unset echo exit cd'),
    literals: words('true false'),
  },
  json: { line: [], block: [], strings: ['"'], keywords: words(''), literals: words('true false null') },
  yaml: { line: ['#'], block: [], strings: ['"', "'"], keywords: words(''), literals: words('true false null yes no on off') },
  sql: {
    line: ['--'],
    block: [['/*', '*/']],
    strings: ["'", '"'],
    keywords: words('select from where and or not insert into values update set delete create table drop alter join left right inner outer on group by order having limit as distinct union all case when then else end index primary key references null is in like between exists'),
    literals: words('true false'),
    caseless: true,
  },
  css: { line: [], block: [['/*', '*/']], strings: ['"', "'"], keywords: words('important media import from to'), literals: words('') },
  html: { line: [], block: [['<!--', '-->']], strings: ['"', "'"], keywords: words(''), literals: words(''), tags: true },
};

const ALIASES = {
  javascript: 'js', jsx: 'js', mjs: 'js', ts: 'js', tsx: 'js', typescript: 'js', node: 'js',
  golang: 'go', rs: 'rust',
  'c++': 'c', cpp: 'c', cc: 'c', h: 'c', hpp: 'c', java: 'c', cs: 'c', csharp: 'c', kotlin: 'c', kt: 'c', swift: 'c', scala: 'c', zig: 'c',
  py: 'python', python3: 'python',
  bash: 'sh', shell: 'sh', zsh: 'sh', console: 'sh', shellscript: 'sh',
  jsonc: 'json', json5: 'json', yml: 'yaml', toml: 'yaml', ini: 'yaml',
  xml: 'html', svg: 'html', htm: 'html', vue: 'html',
  scss: 'css', less: 'css', postgres: 'sql', sqlite: 'sql', mysql: 'sql',
};

/** language returns the lexer name for a fence's info string, or ''. */
export function language(lang) {
  const l = String(lang || '').toLowerCase();
  return LANGS[l] ? l : ALIASES[l] || '';
}

const identStart = /[A-Za-z_$]/;
const identPart = /[A-Za-z0-9_$]/;

/**
 * highlight returns [class, text] pairs for code in lang; class is one of
 * com, str, num, kw, lit, fn, tag, or '' for plain text.
 */
export function highlight(code, lang) {
  const spec = LANGS[language(lang)];
  const src = String(code);
  if (!spec) return [['', src]];
  const out = [];
  const push = (cls, text) => {
    if (!text) return;
    const last = out[out.length - 1];
    if (last && last[0] === cls) last[1] += text;
    else out.push([cls, text]);
  };
  let i = 0;
  const n = src.length;
  outer: while (i < n) {
    for (const lc of spec.line) {
      if (src.startsWith(lc, i) && (lc !== '#' || spec !== LANGS.c || /^#\s*[a-z]/.test(src.slice(i)))) {
        let j = src.indexOf('\n', i);
        if (j === -1) j = n;
        push('com', src.slice(i, j));
        i = j;
        continue outer;
      }
    }
    for (const [open, close] of spec.block) {
      if (src.startsWith(open, i)) {
        let j = src.indexOf(close, i + open.length);
        j = j === -1 ? n : j + close.length;
        push('com', src.slice(i, j));
        i = j;
        continue outer;
      }
    }
    for (const q of spec.strings) {
      if (src.startsWith(q, i)) {
        let j = i + q.length;
        while (j < n && !src.startsWith(q, j)) {
          if (src[j] === '\\' && spec !== LANGS.sh) j++;
          else if (src[j] === '\n' && q.length === 1 && q !== '`' && spec !== LANGS.sh) break;
          j++;
        }
        j = Math.min(n, src.startsWith(q, j) ? j + q.length : j);
        push('str', src.slice(i, j));
        i = j;
        continue outer;
      }
    }
    const c = src[i];
    if (spec.tags && c === '<') {
      const m = /^<\/?[A-Za-z][\w:-]*/.exec(src.slice(i));
      if (m) {
        push('tag', m[0]);
        i += m[0].length;
        continue;
      }
    }
    if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(src[i + 1] || ''))) {
      if (i === 0 || !identPart.test(src[i - 1])) {
        const m = /^(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|(?:\d[\d_]*\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)[a-zA-Z]*/.exec(src.slice(i));
        push('num', m[0]);
        i += m[0].length;
        continue;
      }
    }
    if (identStart.test(c)) {
      let j = i + 1;
      while (j < n && identPart.test(src[j])) j++;
      const w = src.slice(i, j);
      const key = spec.caseless ? w.toLowerCase() : w;
      if (spec.keywords.has(key)) push('kw', w);
      else if (spec.literals.has(key)) push('lit', w);
      else if (src[j] === '(') push('fn', w);
      else push('', w);
      i = j;
      continue;
    }
    push('', c);
    i++;
  }
  return out;
}
