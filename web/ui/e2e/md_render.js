// md_render renders Markdown for markdown_test.go: one JSON request
// {"md": text} per stdin line, one JSON answer {"html": text} or
// {"err": text} per stdout line, with the same parser and serializer the
// page uses.

import readline from 'node:readline';
import { highlight } from '../static/js/highlight.js';
import { parse, toHTML } from '../static/js/markdown.js';

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
  let out;
  try {
    const { md } = JSON.parse(line);
    out = { html: toHTML(parse(md), highlight) };
  } catch (e) {
    out = { err: String((e && e.stack) || e) };
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}
