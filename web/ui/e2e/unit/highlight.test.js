import assert from 'node:assert/strict';
import { test } from 'node:test';
import { highlight, language } from '../../static/js/highlight.js';

test('tokens concatenate to the input, for every language and odd input', () => {
  const inputs = ['', '"unterminated', "/* open", 'a = 1e5 + 0x1F // c\n"s\\"q"', '#include <x>\nint main() {}', "'''doc\n'''", '<div class="a">x</div>', '`tpl ${x}`', '\\', '"\\'];
  for (const lang of ['js', 'go', 'rust', 'c', 'python', 'sh', 'json', 'yaml', 'sql', 'css', 'html', 'nope']) {
    for (const src of inputs) assert.equal(highlight(src, lang).map((t) => t[1]).join(''), src, `${lang}: ${JSON.stringify(src)}`);
  }
});

test('classes', () => {
  assert.deepEqual(highlight('return x // done', 'js'), [['kw', 'return'], ['', ' x '], ['com', '// done']]);
  assert.deepEqual(highlight('SELECT 1', 'sql'), [['kw', 'SELECT'], ['', ' '], ['num', '1']]);
  assert.deepEqual(highlight('f("a")', 'python'), [['fn', 'f'], ['', '('], ['str', '"a"'], ['', ')']]);
  assert.deepEqual(highlight('x1 = 2', 'go'), [['', 'x1 = '], ['num', '2']]);
  assert.deepEqual(highlight('echo "$HOME" # hi', 'bash'), [['kw', 'echo'], ['', ' '], ['str', '"$HOME"'], ['', ' '], ['com', '# hi']]);
});

test('aliases', () => {
  assert.equal(language('TypeScript'), 'js');
  assert.equal(language('golang'), 'go');
  assert.equal(language('c++'), 'c');
  assert.equal(language('brainfuck'), '');
});
