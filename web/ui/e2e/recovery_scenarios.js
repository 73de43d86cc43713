// Scenarios about a conversation surviving failures: a message the model
// refused (an image sent anyway to a text-only model) must not poison the
// turns after it, and a server that stops and comes back must be shown as
// such and picked up again without a reload.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { answered, ask, control, dropFiles, lastReply, ready, send, settled } from './browser.js';

async function poisoned({ page, w, env }) {
  await ready(page, env.base);
  // Short replies: three turns must fit chat-tiny's 256 tokens of context.
  await page.click('#settings-button');
  await page.fill('#param-max_tokens', '8');
  await page.click('#settings-button');
  await dropFiles(page, [{ path: env.image, type: 'image/png' }]);
  await page.waitForSelector('#attachments .chip-image img');
  await send(page, 'What is in this picture?');
  // chat-tiny has no vision: the page warns, and the user sends anyway.
  await page.locator('#notice').getByRole('button', { name: 'Send anyway' }).click();
  const refused = page.locator('article.msg-user').last().locator('.msg-rejected');
  await refused.waitFor();
  await settled(page);
  const mark = await refused.innerText();
  assert.match(mark, /^Not sent to the model: \S/);
  assert.equal(await page.locator('article.msg-assistant').count(), 0, 'an empty failed reply was kept beside the mark');
  // The conversation goes on: later turns do not carry the refused image.
  await ask(page, 'Just text now.');
  assert.equal(await lastReply(page).locator('.msg-error').count(), 0, 'the next text message failed');
  await ask(page, 'And one more.');
  assert.equal(await lastReply(page).locator('.msg-error').count(), 0, 'the third message failed');
  assert.equal(w.chats.length, 3);
  assert.deepEqual(w.chats[1].body.messages, [{ role: 'user', content: 'Just text now.' }]);
  const third = w.chats[2].body.messages;
  assert.deepEqual([third[0].content, third.at(-1).content], ['Just text now.', 'And one more.']);
  assert.ok(!JSON.stringify(third).includes('image_url'), 'the refused image went out again');
  // The mark survives a reload, and Remove takes the message away for good.
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  const first = page.locator('article.msg-user').first();
  assert.equal(await first.locator('.msg-rejected').innerText(), mark);
  await first.getByRole('button', { name: 'Remove this message' }).click();
  await page.locator('article.msg-user .msg-rejected').waitFor({ state: 'detached' });
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  assert.deepEqual((await page.locator('article.msg-user .msg-body').allInnerTexts()).map((t) => t.trim()), ['Just text now.', 'And one more.']);
  assert.equal(await page.locator('article.msg-user img').count(), 0);
  return { mark };
}

// legacy opens a conversation saved before the fix: an image the model
// refused, then its failed reply. The next text message is refused for
// that image (the server names messages[0]); the page marks the image's
// message, leaves it out, and sends the text again at once.
async function legacy({ page, w, env }) {
  await ready(page, env.base);
  const model = (await page.locator('#model-button .model-id').innerText()).trim();
  const png = fs.readFileSync(env.image).toString('base64');
  await page.evaluate(async ({ model, png }) => {
    const store = await import('./js/store.js');
    const db = await store.open();
    const now = Date.now();
    await db.put({
      id: 'legacy', title: 'An old chat', created: now, updated: now, model, system: '', params: { max_tokens: '8' },
      messages: [
        { id: 'u1', role: 'user', text: 'What is in this picture?', attachments: [{ kind: 'image', name: 'sunset.png', mime: 'image/png', data: `data:image/png;base64,${png}` }] },
        { id: 'a1', role: 'assistant', text: '', model, error: 'messages[0].content[0]: image_url content is not supported yet (text only)' },
      ],
    });
    store.setPref('current', 'legacy');
  }, { model, png });
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  // Two answers: the refusal, then the reply to the text sent again.
  let answers = 0;
  const second = page.waitForResponse((r) => r.url().endsWith('/v1/chat/completions') && ++answers === 2);
  await send(page, 'Just text now.');
  await second;
  await settled(page);
  await page.locator('article.msg-user').first().locator('.msg-rejected').waitFor();
  assert.equal(await lastReply(page).locator('.msg-error').count(), 0, 'the text message failed');
  assert.equal((await page.locator('article.msg-user').last().locator('.msg-body').innerText()).trim(), 'Just text now.');
  assert.equal(await page.locator('article.msg-user').last().locator('.msg-rejected').count(), 0, 'the text message was marked');
  assert.equal(w.chats.length, 2);
  assert.deepEqual(w.chats[1].body.messages, [{ role: 'user', content: 'Just text now.' }]);
  return {};
}

async function reconnect({ page, w, env }) {
  // The server is stopped on purpose: the browser logs its failed requests.
  w.allow(/net::ERR_(CONNECTION_REFUSED|CONNECTION_RESET|CONNECTION_CLOSED|EMPTY_RESPONSE)/);
  await ready(page, env.base);
  await page.click('#settings-button');
  await page.fill('#param-max_tokens', '8');
  await page.click('#settings-button');
  await ask(page, 'Hello before the server stops.');
  await page.locator('#model-button .badge.loaded').waitFor();
  await control(env, 'stop');
  // The next message finds nobody: a plain sentence, not "Failed to fetch".
  // (Should the heartbeat have noticed first, the page sent nothing.)
  await send(page, 'Are you still there?');
  await page.locator('#offline').waitFor();
  await settled(page);
  const failed = (await lastReply(page).locator('.msg-error').count()) > 0;
  const shown = failed ? await lastReply(page).locator('.msg-error').innerText() : '';
  if (failed) assert.match(shown, /^Cannot reach Hearth at http:\/\/127\.0\.0\.1:\d+/);
  else await page.locator('#notice', { hasText: 'nothing was sent' }).waitFor();
  const banner = await page.locator('#offline').innerText();
  assert.match(banner, /Hearth is not running/);
  assert.equal(await page.locator('.badge.loaded').count(), 0, 'a model is still shown as loaded');
  assert.equal(await page.isDisabled('#model-button'), true, 'the picker still offers models');
  assert.ok(!(await page.locator('body').innerText()).includes('Failed to fetch'), 'the page shows "Failed to fetch"');
  // Sending while it is down keeps the text in the box and sends nothing.
  const sent = w.chats.length;
  await send(page, 'Typed while it is down.');
  await page.locator('#notice', { hasText: 'nothing was sent' }).waitFor();
  assert.equal(await page.inputValue('#composer-input'), 'Typed while it is down.');
  assert.equal(w.chats.length, sent);
  // The server comes back on the same port: the page notices by itself
  // (it polls /health with backoff) and asks for the model list afresh.
  await control(env, 'start');
  await page.locator('#offline').waitFor({ state: 'hidden', timeout: 60000 });
  await page.waitForSelector('#model-button:not([disabled])');
  assert.equal(await page.locator('#notice', { hasText: 'nothing was sent' }).count(), 0, 'the stale notice stayed');
  // The failed reply can be asked again, and the kept text sent.
  if (failed) {
    await answered(page, () => lastReply(page).getByRole('button', { name: 'Regenerate this reply' }).click());
    assert.equal(await lastReply(page).locator('.msg-error').count(), 0, 'regenerating after the restart failed');
  }
  await answered(page, () => page.press('#composer-input', 'Enter'));
  assert.equal(await lastReply(page).locator('.msg-error').count(), 0, 'sending after the restart failed');
  assert.equal(w.chats.at(-1).body.messages.at(-1).content, 'Typed while it is down.');
  assert.equal(await page.locator('.msg-rejected').count(), 0, 'a message was refused after the restart');
  return { shown, banner, failed };
}

export const recoveryScenarios = { poisoned, legacy, reconnect };
