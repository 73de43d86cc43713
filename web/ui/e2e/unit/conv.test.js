import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cleanParams, create, fileName, request, titleFrom, toMarkdown } from '../../static/js/conv.js';

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
