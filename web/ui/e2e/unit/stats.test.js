import assert from 'node:assert/strict';
import { test } from 'node:test';
import { messageOf } from '../../static/js/api.js';
import { fitText } from '../../static/js/models.js';
import { Meter, format } from '../../static/js/stats.js';

test('meter: chunks while streaming, usage at the end', () => {
  const m = new Meter(1000);
  assert.deepEqual(m.snapshot(), { ttftMs: null, tokensPerSec: null, completionTokens: 0, promptTokens: null, totalTokens: null });
  m.token(1250);
  m.token(1300);
  m.token(1350);
  assert.deepEqual(m.snapshot(), { ttftMs: 250, tokensPerSec: 20, completionTokens: 3, promptTokens: null, totalTokens: null });
  m.setUsage({ prompt_tokens: 10, completion_tokens: 5 });
  assert.deepEqual(m.snapshot(), { ttftMs: 250, tokensPerSec: 40, completionTokens: 5, promptTokens: 10, totalTokens: 15 });
  assert.equal(format(m.snapshot(), 4096), '40.0 tok/s · first token 250 ms · 5 tokens · 15 / 4096 context');
  assert.equal(format(m.snapshot()), '40.0 tok/s · first token 250 ms · 5 tokens · 15 in context');
});

test('messageOf reads every error dialect', () => {
  const cases = [
    ['{"error":{"message":"model does not support images","type":"invalid_request_error"}}', 'model does not support images'],
    ['{"type":"error","error":{"type":"x","message":"anthropic says"}}', 'anthropic says'],
    ['{"error":"ollama says"}', 'ollama says'],
    ['plain text\n', 'plain text'],
    ['', ''],
  ];
  for (const [body, want] of cases) assert.equal(messageOf(body), want, body);
});

test('fitText', () => {
  assert.equal(fitText({ status: 'tight', need_bytes: 5.2e9, available_bytes: 6.1e9 }), 'Fits, with little memory to spare; needs 5.2 GB; 6.1 GB available');
  assert.equal(fitText({ status: "won't fit" }), 'Does not fit in memory; loading it will be refused');
  assert.equal(fitText(null), '');
});
