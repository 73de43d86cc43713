import assert from 'node:assert/strict';
import { test } from 'node:test';
import { blame, cleanParams, create, fileName, request, sources, titleFrom, toMarkdown } from '../../static/js/conv.js';

function sample() {
  const c = create('id1', 'qwen3', 1);
  c.title = 'Plans: "big" ones';
  c.system = 'Be brief.';
  c.params = { temperature: '0.5', top_k: '40.4', top_p: '', seed: 'x', max_tokens: '0' };
  c.messages = [
    { id: 'u1', role: 'user', text: 'Hi', attachments: [] },
    { id: 'a1', role: 'assistant', text: '<think>hmm</think>Hello!', model: 'qwen3' },
    { id: 'u2', role: 'user', text: 'Look', attachments: [{ kind: 'image', name: 'p.png', data: 'data:image/png;base64,AA' }] },
    { id: 'a2', role: 'assistant', text: '', error: 'model does not support images', model: 'qwen3' },
    { id: 'u3', role: 'user', text: 'Again' },
  ];
  return c;
}

test('request', () => {
  const body = request(sample());
  assert.deepEqual(body, {
    model: 'qwen3',
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello!' },
      { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AA' } }, { type: 'text', text: 'Look' }] },
      { role: 'user', content: 'Again' },
    ],
    temperature: 0.5,
    top_k: 40,
  });
  assert.equal(request(sample(), 1).messages.length, 3, 'upTo cuts the history');
});

test('a rejected message stays out of every later request', () => {
  const c = sample();
  c.messages[2].rejected = 'messages[3].content[0]: image_url content is not supported yet (text only)';
  c.messages.splice(3, 1); // its empty reply is dropped
  c.messages.push({ id: 'a3', role: 'assistant', text: 'Again to you.', model: 'qwen3' }, { id: 'u4', role: 'user', text: 'More' });
  assert.deepEqual(request(c).messages.map((m) => m.content), ['Be brief.', 'Hi', 'Hello!', 'Again', 'Again to you.', 'More']);
  assert.deepEqual(sources(c), ['', 'u1', 'a1', 'u3', 'a3', 'u4']);
  assert.match(toMarkdown(c), /\*\[image: p\.png\]\*\n\n\*\(not sent to the model: messages\[3\]\.content\[0\]: image_url content is not supported yet \(text only\)\)\*\n\nLook\n/);
});

test('blame', () => {
  const ids = ['', 'u1', 'a1', 'u2'];
  const cases = [
    { name: 'param names a message', err: { status: 400, param: 'messages[3].content[0]' }, want: 'u2' },
    { name: 'param names an earlier message', err: { status: 400, param: 'messages[1].content' }, want: 'u1' },
    { name: 'param names the system prompt', err: { status: 400, param: 'messages[0].content' }, want: '' },
    { name: 'the conversation is too long', err: { status: 400, param: 'messages', code: 'context_length_exceeded' }, want: 'u9' },
    { name: 'no param', err: { status: 400, param: '' }, want: 'u9' },
    { name: 'body too large', err: { status: 413, param: '' }, want: 'u9' },
    { name: 'the model is at fault', err: { status: 400, param: 'model', code: 'insufficient_memory' }, want: '' },
    { name: 'a setting', err: { status: 400, param: 'max_tokens' }, want: '' },
    { name: 'no such model', err: { status: 404, param: 'model' }, want: '' },
    { name: 'queue full', err: { status: 429 }, want: '' },
    { name: 'server error', err: { status: 500 }, want: '' },
    { name: 'no status (network)', err: new Error('x'), want: '' },
  ];
  for (const tt of cases) assert.equal(blame(tt.err, ids, 'u9'), tt.want, tt.name);
});

test('cleanParams drops empty, invalid and out-of-range values', () => {
  assert.deepEqual(cleanParams({ temperature: '3', min_p: '0.05', seed: '12', max_tokens: '' }), { min_p: 0.05, seed: 12 });
});

test('titles and file names', () => {
  assert.equal(titleFrom('  hello \n world '), 'hello world');
  assert.equal(titleFrom(''), 'New chat');
  assert.equal(titleFrom('x'.repeat(60)).length, 48);
  assert.equal(fileName(sample(), 'md'), 'plans-big-ones.md');
  assert.equal(fileName({ title: '???' }, 'json'), 'chat.json');
});

test('toMarkdown', () => {
  assert.equal(
    toMarkdown(sample()),
    [
      '# Plans: "big" ones',
      '',
      '*Model: qwen3*',
      '*Settings: temperature=0.5, top_k=40*',
      '',
      '## System',
      '',
      'Be brief.',
      '',
      '## User',
      '',
      'Hi',
      '',
      '## Assistant (qwen3)',
      '',
      '<details><summary>Thinking</summary>',
      '',
      'hmm',
      '',
      '</details>',
      '',
      'Hello!',
      '',
      '## User',
      '',
      '*[image: p.png]*',
      '',
      'Look',
      '',
      '## Assistant (qwen3)',
      '',
      '> Error: model does not support images',
      '',
      '## User',
      '',
      'Again',
      '',
    ].join('\n'),
  );
});
