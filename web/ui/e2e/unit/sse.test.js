import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Parser, events } from '../../static/js/sse.js';

function parseAll(pieces) {
  const got = [];
  const p = new Parser((ev) => got.push(ev));
  for (const s of pieces) p.push(s);
  p.end();
  return got;
}

const stream = 'data: {"a":1}\n\n: comment\nevent: error\ndata: line1\ndata: line2\n\ndata:nospace\r\n\r\ndata: [DONE]\n\n';
const want = [
  { event: 'message', data: '{"a":1}', id: '' },
  { event: 'error', data: 'line1\nline2', id: '' },
  { event: 'message', data: 'nospace', id: '' },
  { event: 'message', data: '[DONE]', id: '' },
];

test('whole stream', () => assert.deepEqual(parseAll([stream]), want));

test('every split point gives the same events', () => {
  for (let k = 0; k <= stream.length; k++) assert.deepEqual(parseAll([stream.slice(0, k), stream.slice(k)]), want, `split at ${k}`);
});

test('one character at a time, CR-only line ends', () => {
  const cr = stream.replace(/\r?\n/g, '\r');
  assert.deepEqual(parseAll([...cr]), want);
});

test('a last event without its blank line is delivered', () => {
  assert.deepEqual(parseAll(['data: tail']), [{ event: 'message', data: 'tail', id: '' }]);
});

test('events() reads a byte stream split inside a UTF-8 character', async () => {
  const bytes = new TextEncoder().encode('data: héllo ✓\n\ndata: [DONE]\n\n');
  const body = new ReadableStream({
    start(c) {
      for (let k = 0; k < bytes.length; k += 3) c.enqueue(bytes.slice(k, k + 3));
      c.close();
    },
  });
  const got = [];
  for await (const ev of events(body)) got.push(ev.data);
  assert.deepEqual(got, ['héllo ✓', '[DONE]']);
});
