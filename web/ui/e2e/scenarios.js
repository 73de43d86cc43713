// Scenarios that talk to the server: streaming, stop, switching models,
// attachments, keeping conversations across a reload, regenerate and edit.
// Each returns observations browser_test.go checks against what the server
// (through its recording proxy) saw.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { answered, dropFiles, lastReply, ready, seeded, send, settled } from './browser.js';

// replyText is a reply's answer and thinking: the test model's random
// tokens may well open a <think> section.
const replyText = (loc) => loc.evaluate((a) => [...a.querySelectorAll('.think-body, .msg-body')].map((e) => e.textContent).join(''));

async function stream({ page, w, env }) {
  await ready(page, env.base);
  // Seed 3 gives a 229-token reply (to max_tokens), long enough to watch grow.
  await seeded(page, 3);
  await send(page, 'Hello! Say something.');
  const reply = lastReply(page);
  // Watch the text grow while the reply streams.
  const lengths = [];
  const t0 = Date.now();
  while (Date.now() - t0 < 30000) {
    const busy = await reply.getAttribute('aria-busy');
    lengths.push((await replyText(reply)).length);
    if (busy !== 'true') break;
    await page.waitForTimeout(40);
  }
  await settled(page);
  const text = await replyText(reply);
  assert.ok(text.trim().length > 0, 'the reply is empty');
  const grew = new Set(lengths.filter((n) => n > 0 && n < text.length));
  assert.ok(grew.size >= 2, `the reply did not stream in (lengths seen: ${lengths.join(',')})`);
  assert.equal(await reply.locator('.msg-error').count(), 0, 'the reply failed');
  const stats = await reply.locator('.msg-stats').innerText();
  assert.match(stats, /tok\/s/, 'no tokens/s in the stats');
  assert.match(stats, /first token \d+ ms/, 'no time to first token in the stats');
  assert.match(await page.locator('#stats-text').innerText(), /Context: \d+ of \d+ tokens used/);
  assert.equal(w.chats.length, 1);
  const body = w.chats[0].body;
  assert.equal(body.stream, true);
  assert.equal(body.seed, 3);
  assert.deepEqual(body.stream_options, { include_usage: true });
  assert.deepEqual(body.messages, [{ role: 'user', content: 'Hello! Say something.' }]);
  return { text, stats, model: body.model };
}

async function stop({ page, w, env }) {
  await ready(page, env.base);
  await seeded(page, 3);
  await send(page, 'Tell me a long story.');
  const reply = lastReply(page);
  await page.waitForFunction(() => {
    const a = [...document.querySelectorAll('article.msg-assistant')].pop();
    return a && [...a.querySelectorAll('.think-body, .msg-body')].some((e) => e.textContent.trim() !== '');
  });
  assert.equal(await reply.getAttribute('aria-busy'), 'true', 'the reply finished before it could be stopped');
  await page.keyboard.press('Escape');
  await reply.locator('.msg-note', { hasText: 'Stopped.' }).waitFor();
  await page.waitForSelector('#send-button:not([hidden])');
  const stopped = await replyText(reply);
  await page.waitForTimeout(500);
  assert.equal(await replyText(reply), stopped, 'text kept arriving after Stop');
  const aborted = w.failed.filter((f) => f.url.endsWith('/v1/chat/completions'));
  assert.equal(aborted.length, 1, 'the browser did not abort the request');
  // The next request is served at once: nothing is left holding the model.
  await answered(page, () => send(page, 'And now a short one.'));
  const next = lastReply(page);
  assert.equal(await next.locator('.msg-error').count(), 0, 'the request after Stop failed');
  assert.ok((await replyText(next)).trim().length > 0, 'the request after Stop got no text');
  assert.equal(w.chats.length, 2);
  // The stopped reply is kept, without its partial answer in the history.
  return { stoppedText: stopped, abortError: aborted[0].error };
}

async function models({ page, w, env }) {
  assert.ok(env.models.length >= 2, 'the server lists fewer than two models');
  await ready(page, env.base);
  const first = (await page.locator('#model-button .model-id').innerText()).trim();
  const other = env.models.find((m) => m !== first);
  // Keyboard: open with ArrowDown, move to the other model, choose with Enter.
  await page.focus('#model-button');
  await page.keyboard.press('ArrowDown');
  await page.waitForSelector('#model-list:not([hidden])');
  const options = page.locator('#model-list [role=option]');
  assert.equal(await options.count(), env.models.length);
  const ids = await options.evaluateAll((lis) => lis.map((li) => li.dataset.id));
  assert.deepEqual([...ids].sort(), [...env.models].sort());
  const tiers = await page.locator('#model-list .badge.tier').allInnerTexts();
  assert.ok(tiers.length > 0 && tiers.every((t) => t === 'targeted' || t === 'generic'), `tier badges: ${tiers}`);
  const fits = await page.locator('#model-list .badge.fit').evaluateAll((els) => els.map((e) => e.title));
  for (const f of fits) assert.match(f, /needs .+B; .+B available/, 'fit numbers on hover');
  const from = ids.indexOf(first);
  const to = ids.indexOf(other);
  for (let k = 0; k < Math.abs(to - from); k++) await page.keyboard.press(to > from ? 'ArrowDown' : 'ArrowUp');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#model-list', { state: 'hidden' });
  assert.equal((await page.locator('#model-button .model-id').innerText()).trim(), other);
  assert.equal(await page.evaluate(() => document.activeElement.id), 'model-button', 'focus returns to the picker');
  await answered(page, () => send(page, 'Which model are you?'));
  assert.equal((await lastReply(page).locator('.msg-role').innerText()).trim(), other);
  assert.equal(w.chats[0].body.model, other);
  // The choice sticks to the conversation across a reload.
  await page.reload();
  await page.waitForSelector('#model-button:not([disabled])');
  assert.equal((await page.locator('#model-button .model-id').innerText()).trim(), other);
  return { from: first, to: other };
}

async function media({ page, w, env }) {
  await ready(page, env.base);
  await dropFiles(page, [
    { path: env.image, type: 'image/png' },
    { path: env.audio, type: 'audio/wav' },
  ]);
  await page.waitForSelector('#attachments .chip-image img');
  await page.waitForSelector('#attachments .chip-audio audio');
  const caps = await page.evaluate(async () => {
    const r = await fetch('v1/models');
    return (await r.json()).data.map((m) => ({ id: m.id, capabilities: m.capabilities }));
  });
  const id = (await page.locator('#model-button .model-id').innerText()).trim();
  const mine = caps.find((m) => m.id === id);
  const out = { model: id };
  const respP = page.waitForResponse((r) => r.url().endsWith('/v1/chat/completions'));
  await send(page, 'What is in this picture and this sound?');
  if (mine && Array.isArray(mine.capabilities) && !(mine.capabilities.includes('vision') && mine.capabilities.includes('audio'))) {
    // The UI says so before sending anything.
    const notice = page.locator('#notice');
    await notice.waitFor();
    const msg = await notice.locator('.notice-text').innerText();
    assert.match(msg, /does not accept (images|audio)/);
    await page.waitForTimeout(300);
    assert.equal(w.chats.length, 0, 'a request went out before the user chose to send anyway');
    out.capabilityMessage = msg;
    await notice.getByRole('button', { name: 'Send anyway' }).click();
  }
  const resp = await respP;
  await settled(page);
  assert.equal(w.chats.length, 1);
  const content = w.chats[0].body.messages.at(-1).content;
  assert.ok(Array.isArray(content), 'content is not a parts array');
  const img = content.find((p) => p.type === 'image_url');
  const aud = content.find((p) => p.type === 'input_audio');
  assert.ok(img && img.image_url.url.startsWith('data:image/png;base64,'), 'no image_url part');
  assert.ok(aud && aud.input_audio.format === 'wav' && aud.input_audio.data.length > 100, 'no input_audio part');
  assert.equal(Buffer.from(aud.input_audio.data, 'base64').toString('latin1', 0, 4), 'RIFF');
  assert.deepEqual(Buffer.from(img.image_url.url.split(',')[1], 'base64'), fs.readFileSync(env.image), 'the image was altered');
  // The sent message shows its thumbnail and player.
  const user = page.locator('article.msg-user').last();
  assert.equal(await user.locator('img').count(), 1);
  assert.equal(await user.locator('audio').count(), 1);
  out.status = resp.status();
  if (resp.status() >= 400) {
    // The server's message, verbatim, on the message it refused.
    const body = await resp.json();
    const shown = await user.locator('.msg-rejected').innerText();
    assert.equal(shown, `Not sent to the model: ${body.error.message}`);
    out.serverMessage = body.error.message;
  }
  return out;
}

// loaded waits until an image element shows a decoded picture.
const loaded = (loc) => loc.evaluate((img) => (img.complete ? Promise.resolve() : new Promise((r) => img.addEventListener('load', r, { once: true }))).then(() => img.naturalWidth));

// attach drops, pastes and picks an image for a text-only model: the
// thumbnail shows in the composer at once, and so does the warning that
// the model takes no images (from its capabilities, before anything is
// sent); removing the image takes the warning back. Sent anyway, the
// message keeps its thumbnail in the transcript, marked with the server's
// 400.
async function attach({ page, w, env }) {
  await ready(page, env.base);
  const model = (await page.locator('#model-button .model-id').innerText()).trim();
  const caps = await page.evaluate(async (id) => {
    const r = await fetch('v1/models');
    const m = (await r.json()).data.find((x) => x.id === id);
    return m && m.capabilities;
  }, model);
  assert.ok(Array.isArray(caps) && !caps.includes('vision'), `${model} lists vision: ${caps}`);
  const notice = page.locator('#notice');
  const warned = async () => {
    await notice.waitFor();
    const text = (await notice.locator('.notice-text').innerText()).trim();
    assert.ok(text.startsWith(`${model} does not accept images (it lacks the “vision” capability)`), `the warning: ${text}`);
    assert.equal(await notice.getByRole('button', { name: 'Send anyway' }).count(), 0, 'the warning at attach time offers to send');
    return text;
  };
  // Dropped onto the conversation.
  await dropFiles(page, [{ path: env.image, type: 'image/png' }]);
  const chip = page.locator('#attachments .chip-image img');
  await chip.waitFor();
  assert.ok((await loaded(chip)) > 0, 'the composer thumbnail shows no picture');
  const warning = await warned();
  assert.equal(w.chats.length, 0, 'attaching sent a request');
  await page.getByRole('button', { name: 'Remove sunset.png' }).click();
  await notice.waitFor({ state: 'hidden' });
  assert.equal(await page.locator('#attachments .chip').count(), 0);
  // Pasted into the message box.
  const png = fs.readFileSync(env.image).toString('base64');
  await page.evaluate((b64) => {
    const bin = atob(b64);
    const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
    const dt = new DataTransfer();
    dt.items.add(new File([bytes], 'pasted.png', { type: 'image/png' }));
    document.getElementById('composer-input').dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
  }, png);
  await page.locator('#attachments .chip-image', { hasText: 'pasted.png' }).waitFor();
  await warned();
  // Picked with the file button.
  await page.setInputFiles('#file-input', env.image);
  await page.waitForFunction(() => document.querySelectorAll('#attachments .chip-image').length === 2);
  await page.getByRole('button', { name: 'Remove pasted.png' }).click();
  await page.waitForFunction(() => document.querySelectorAll('#attachments .chip-image').length === 1);
  await warned();
  // Sending asks first; sent anyway, the server refuses it by name.
  const respP = page.waitForResponse((r) => r.url().endsWith('/v1/chat/completions'));
  await send(page, 'What is in this picture?');
  await notice.getByRole('button', { name: 'Send anyway' }).click();
  const resp = await respP;
  await settled(page);
  const body = await resp.json();
  assert.equal(resp.status(), 400);
  assert.match(body.error.message, new RegExp(`model "${model.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}" takes no images`));
  const user = page.locator('article.msg-user').last();
  const thumb = user.locator('figure.att img');
  assert.equal(await thumb.count(), 1, 'the sent message has no thumbnail');
  assert.ok((await loaded(thumb)) > 0, 'the transcript thumbnail shows no picture');
  assert.equal(await user.locator('.msg-rejected').innerText(), `Not sent to the model: ${body.error.message}`);
  assert.equal(await page.locator('#attachments .chip').count(), 0, 'the composer kept the sent image');
  return { warning, serverMessage: body.error.message, param: body.error.param };
}

async function persist({ page, w, env }) {
  await ready(page, env.base);
  await answered(page, () => send(page, 'First conversation'));
  await page.click('#new-chat');
  await answered(page, () => send(page, 'Second conversation'));
  const items = page.locator('#conv-list .conv');
  assert.equal(await items.count(), 2);
  // Rename the first one.
  const first = items.filter({ hasText: 'First conversation' });
  await first.getByRole('button', { name: /^Rename/ }).click();
  await page.fill('.conv-rename', 'Renamed chat');
  await page.press('.conv-rename', 'Enter');
  await page.locator('#conv-list .conv', { hasText: 'Renamed chat' }).waitFor();
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  const titles = await page.locator('#conv-list .conv-open').allInnerTexts();
  assert.deepEqual(titles.map((t) => t.trim()).sort(), ['Renamed chat', 'Second conversation']);
  // The open conversation survived with its reply.
  assert.equal((await page.locator('article.msg-user .msg-body').innerText()).trim(), 'Second conversation');
  assert.equal(await page.locator('article.msg-assistant').count(), 1);
  await page.locator('#conv-list .conv-open', { hasText: 'Renamed chat' }).click();
  assert.equal((await page.locator('article.msg-user .msg-body').innerText()).trim(), 'First conversation');
  assert.equal(await page.locator('#conv-list .conv-open[aria-current]').innerText(), 'Renamed chat');
  // Export.
  const [dj] = await Promise.all([page.waitForEvent('download'), page.click('#export-json')]);
  const json = JSON.parse(fs.readFileSync(await dj.path(), 'utf8'));
  assert.equal(json.title, 'Renamed chat');
  assert.equal(json.messages.length, 2);
  assert.equal(dj.suggestedFilename(), 'renamed-chat.json');
  const [dm] = await Promise.all([page.waitForEvent('download'), page.click('#export-md')]);
  const md = fs.readFileSync(await dm.path(), 'utf8');
  assert.match(md, /^# Renamed chat\n/);
  assert.match(md, /## User\n\nFirst conversation\n/);
  // Delete it; it stays gone after a reload.
  page.once('dialog', (d) => d.accept());
  await page.locator('#conv-list .conv', { hasText: 'Renamed chat' }).getByRole('button', { name: /^Delete/ }).click();
  await page.locator('#conv-list .conv', { hasText: 'Renamed chat' }).waitFor({ state: 'detached' });
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  assert.deepEqual((await page.locator('#conv-list .conv-open').allInnerTexts()).map((t) => t.trim()), ['Second conversation']);
  return { requests: w.chats.length };
}

async function edit({ page, w, env }) {
  await ready(page, env.base);
  await answered(page, () => send(page, 'Original question'));
  await answered(page, () => page.getByRole('button', { name: 'Regenerate this reply' }).click());
  assert.equal(w.chats.length, 2);
  assert.deepEqual(w.chats[1].body.messages, w.chats[0].body.messages, 'regenerate sent a different history');
  assert.equal(await page.locator('article.msg').count(), 2, 'regenerate kept the old reply');
  await page.getByRole('button', { name: 'Edit and resend this message' }).click();
  const box = page.locator('.edit-box');
  await box.fill('Edited question');
  await answered(page, () => box.press('Enter'));
  assert.equal(w.chats.length, 3);
  assert.deepEqual(w.chats[2].body.messages, [{ role: 'user', content: 'Edited question' }]);
  assert.equal((await page.locator('article.msg-user .msg-body').innerText()).trim(), 'Edited question');
  assert.equal(await page.locator('article.msg').count(), 2);
  // A second turn sends the first reply back without its reasoning.
  await answered(page, () => send(page, 'Follow-up'));
  const msgs = w.chats[3].body.messages;
  assert.deepEqual(msgs.map((m) => m.role), ['user', 'assistant', 'user']);
  assert.ok(!String(msgs[1].content).includes('<think>'));
  return { requests: w.chats.length };
}

async function screenshot({ page, env }) {
  await page.setViewportSize({ width: 1280, height: 1060 });
  await ready(page, env.base);
  await dropFiles(page, [{ path: env.image, type: 'image/png' }]);
  await page.waitForSelector('#attachments .chip-image img');
  await answered(page, () => send(page, 'What is in this picture?'));
  await page.mouse.move(0, 0);
  await page.evaluate(() => {
    document.getElementById('messages').scrollTop = 0;
  });
  await page.screenshot({ path: process.env.SHOT });
  return { shot: process.env.SHOT };
}

// vision drops a picture into the chat with a model that takes images
// (the tiny Gemma 3 with a vision tower) and gets an answer: no warning,
// the thumbnail in the composer and then in the transcript, a reply.
async function vision({ page, env }) {
  await ready(page, env.base);
  const model = (await page.locator('#model-button .model-id').innerText()).trim();
  await seeded(page, 3); // as in hear: an unseeded answer may be empty
  await dropFiles(page, [{ path: env.image, type: 'image/png' }]);
  const chip = page.locator('#attachments .chip-image img');
  await chip.waitFor();
  assert.ok((await loaded(chip)) > 0, 'the composer thumbnail shows no picture');
  assert.equal(await page.locator('#notice:not([hidden])').count(), 0, `${model} takes images, yet the page warns`);
  const res = page.waitForResponse((r) => r.url().endsWith('/v1/chat/completions') && r.request().method() === 'POST');
  await send(page, 'What is in this picture?');
  const status = (await res).status();
  await settled(page);
  const user = page.locator('article.msg-user').last();
  const thumb = user.locator('figure.att img');
  assert.equal(await thumb.count(), 1, 'the sent message has no thumbnail');
  assert.ok((await loaded(thumb)) > 0, 'the transcript thumbnail shows no picture');
  assert.equal(await user.locator('.msg-rejected').count(), 0, 'the message was refused');
  const reply = (await lastReply(page).locator('.msg-body').innerText()).trim();
  assert.ok(reply.length > 0, 'no reply');
  return { status, model, reply };
}

// thinking talks to a model whose chat template opens a <think> block, so
// the server streams its whole reply as delta.reasoning_content: the page
// shows it in the Thinking block, not as the answer, and a later turn does
// not send it back.
async function thinking({ page, w, env }) {
  await ready(page, env.base);
  await seeded(page, 3); // as in hear: an unseeded thought may be empty
  await answered(page, () => send(page, 'Why is the sky blue?'));
  const reply = lastReply(page);
  assert.equal(await reply.locator('details.thinking').isVisible(), true, 'no Thinking block');
  const thought = (await reply.locator('.think-body').textContent()).trim();
  assert.ok(thought.length > 0, 'the Thinking block is empty');
  assert.equal((await reply.locator('.msg-body').textContent()).trim(), '', 'the thinking shows as the answer');
  assert.equal(await reply.locator('.msg-error').count(), 0, 'the reply failed');
  const before = w.chats.length;
  await answered(page, () => send(page, 'And at sunset?'));
  const later = JSON.stringify(w.chats[before].body.messages);
  assert.ok(!later.includes(thought.slice(0, 8)), `the thinking went back to the server: ${later}`);
  return { thought, requests: w.chats.length };
}

// record records two seconds from the microphone (Chromium's fake device,
// a beep) with the composer's record button: the clip waits as a chip with
// a player, goes out as an input_audio part in its own container (WebM or
// MP4, decoded by the server, not the page), and the model answers when it
// takes audio; a model without audio gets the page's warning first.
async function record({ page, w, env }) {
  await ready(page, env.base);
  const model = (await page.locator('#model-button .model-id').innerText()).trim();
  const button = page.locator('#record-button');
  await button.waitFor();
  assert.equal(await button.getAttribute('aria-pressed'), 'false');
  await button.click();
  await page.waitForFunction(() => document.getElementById('record-button').getAttribute('aria-pressed') === 'true');
  await page.waitForTimeout(2000);
  assert.match(await button.innerText(), /^■ 0:0[1-3]$/, 'the button shows no running clock');
  await button.click();
  const chip = page.locator('#attachments .chip-audio');
  await chip.waitFor();
  const name = (await chip.locator('.chip-name').innerText()).trim();
  assert.match(name, /^recording-\d{6}\.(webm|m4a|ogg)$/);
  const caps = await page.evaluate(async (id) => {
    const r = await fetch('v1/models');
    const m = (await r.json()).data.find((x) => x.id === id);
    return (m && m.capabilities) || [];
  }, model);
  const res = page.waitForResponse((r) => r.url().endsWith('/v1/chat/completions') && r.request().method() === 'POST');
  await send(page, 'What did I say?');
  if (!caps.includes('audio')) {
    const notice = page.locator('#notice');
    await notice.waitFor();
    assert.match(await notice.locator('.notice-text').innerText(), /does not accept audio/);
    await notice.getByRole('button', { name: 'Send anyway' }).click();
  }
  const status = (await res).status();
  await settled(page);
  const part = w.chats.at(-1).body.messages.at(-1).content.find((p) => p.type === 'input_audio');
  assert.ok(part, 'no input_audio part');
  const bytes = Buffer.from(part.input_audio.data, 'base64');
  const [at, sig] = { webm: [0, '1a45dfa3'], mp4: [4, '66747970'], ogg: [0, '4f676753'] }[part.input_audio.format] || [0, 'unknown format'];
  assert.equal(bytes.toString('hex', at, at + 4), sig, `a ${part.input_audio.format} recording that is not one`);
  const user = page.locator('article.msg-user').last();
  assert.equal(await user.locator('audio').count(), 1, 'the sent message has no player');
  const out = { model, status, format: part.input_audio.format, bytes: bytes.length, capabilities: caps };
  if (caps.includes('audio')) {
    assert.equal(status, 200, 'the model takes audio but refused the recording');
    assert.equal(await user.locator('.msg-rejected').count(), 0, 'the message was refused');
    out.reply = (await lastReply(page).locator('.msg-body').innerText()).trim();
  }
  return out;
}

// hear drops a WAV into the chat with a model that takes audio (the tiny
// Gemma 4 with its audio tower) and gets an answer: no warning, the player
// in the composer and then in the transcript, a reply.
async function hear({ page, env }) {
  await ready(page, env.base);
  const model = (await page.locator('#model-button .model-id').innerText()).trim();
  // Seeded: the tiny model's random answer may otherwise be its end of
  // turn at once, an empty reply (seed 3 gives text).
  await seeded(page, 3);
  await dropFiles(page, [{ path: env.audio, type: 'audio/wav' }]);
  await page.locator('#attachments .chip-audio audio').waitFor();
  assert.equal(await page.locator('#notice:not([hidden])').count(), 0, `${model} takes audio, yet the page warns`);
  const res = page.waitForResponse((r) => r.url().endsWith('/v1/chat/completions') && r.request().method() === 'POST');
  await send(page, 'What is this sound?');
  const status = (await res).status();
  await settled(page);
  const user = page.locator('article.msg-user').last();
  assert.equal(await user.locator('figure.att audio').count(), 1, 'the sent message has no player');
  assert.equal(await user.locator('.msg-rejected').count(), 0, 'the message was refused');
  const reply = (await lastReply(page).locator('.msg-body').innerText()).trim();
  assert.ok(reply.length > 0, 'no reply');
  return { status, model, reply };
}

export const scenarios = { stream, stop, models, media, attach, persist, edit, screenshot, vision, thinking, record, hear };
