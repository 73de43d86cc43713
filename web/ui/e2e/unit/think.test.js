import assert from 'node:assert/strict';
import { test } from 'node:test';
import { split, strip } from '../../static/js/think.js';

test('split', () => {
  const cases = [
    { name: 'no thinking', in: 'Hello', want: { thinking: null, answer: 'Hello', thinkingOpen: false } },
    { name: 'closed', in: '<think>\nplan\n</think>\n\nAnswer', want: { thinking: 'plan', answer: 'Answer', thinkingOpen: false } },
    { name: 'open while streaming', in: '<think>still going', want: { thinking: 'still going', answer: '', thinkingOpen: true } },
    { name: 'tag still arriving', in: '<thi', want: { thinking: null, answer: '', thinkingOpen: false } },
    { name: 'opening tag in the prompt', in: 'reasoning here</think>Answer', want: { thinking: 'reasoning here', answer: 'Answer', thinkingOpen: false } },
    { name: 'leading space', in: '  <think>a</think>b', want: { thinking: 'a', answer: 'b', thinkingOpen: false } },
    { name: 'a tag mentioned mid-answer stays text', in: 'Use <think> tags like <think>x</think>', want: { thinking: null, answer: 'Use <think> tags like <think>x</think>', thinkingOpen: false } },
  ];
  for (const c of cases) assert.deepEqual(split(c.in), c.want, c.name);
});

test('reasoning_content joins the thinking', () => {
  assert.deepEqual(split('', 'pondering'), { thinking: 'pondering', answer: '', thinkingOpen: true });
  assert.deepEqual(split('Done.', 'pondering'), { thinking: 'pondering', answer: 'Done.', thinkingOpen: false });
});

test('strip keeps only the answer', () => {
  assert.equal(strip('<think>x</think>\n Answer \n'), 'Answer');
});
