// Browser holds what every scenario needs: Debian's Chromium started by
// playwright-core (never a downloaded browser), a page whose requests and
// CSP violations are watched, and helpers to drive the chat.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';

/**
 * ARGS are Chromium's flags: headless, no network of its own, and a fake
 * microphone (a steady beep) that needs no prompt, for the recorder.
 */
export const ARGS = [
  '--headless',
  '--use-fake-device-for-media-stream',
  '--use-fake-ui-for-media-stream',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** launch starts Chromium at CHROMIUM (default /usr/bin/chromium). */
export function launch() {
  return chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ARGS });
}

/**
 * watch records a page's requests, failed requests, console errors and
 * CSP violations, for the checks every scenario ends with.
 */
export function watch(page, base) {
  const w = { requests: [], failed: [], errors: [], violations: [], chats: [] };
  const origin = new URL(base).origin;
  page.on('request', (r) => {
    w.requests.push(r.url());
    if (r.url().endsWith('/v1/chat/completions') && r.method() === 'POST') w.chats.push({ request: r, body: r.postDataJSON() });
  });
  page.on('requestfailed', (r) => w.failed.push({ url: r.url(), error: r.failure() && r.failure().errorText }));
  // allowed are console errors a scenario expects (a refused request, a
  // server it stopped): patterns matched against "text url".
  // A 400 is a refusal the page shows; a 404 from /api/catalog, a server
  // without a catalog.
  w.allowed = [/Failed to load resource: the server responded with a status of 400/, /status of 404 .*\/api\/catalog$/];
  w.allow = (re) => w.allowed.push(re);
  page.on('console', (m) => {
    const t = m.text();
    const at = `${t} ${(m.location() && m.location().url) || ''}`;
    if (/Content Security Policy|Refused to/i.test(t)) w.violations.push(t);
    else if (m.type() === 'error' && !w.allowed.some((re) => re.test(at))) w.errors.push(at);
  });
  page.on('pageerror', (e) => w.errors.push(String(e)));
  w.check = () => {
    const foreign = w.requests.filter((u) => !u.startsWith(origin + '/') && !u.startsWith('data:') && !u.startsWith('blob:'));
    assert.deepEqual(foreign, [], 'the page made requests off its own origin');
    assert.deepEqual(w.violations, [], 'Content-Security-Policy violations');
    assert.deepEqual(w.errors, [], 'errors on the page');
  };
  return w;
}

/**
 * control asks the test (browser_test.go's control) to change the world:
 * stop or start the server, clear the hub's faults.
 */
export async function control(env, action) {
  assert.ok(env.control, 'this scenario needs CONTROL');
  const res = await fetch(`${env.control}/${action}`, { method: 'POST' });
  assert.equal(res.status, 200, `control ${action}: ${await res.text()}`);
}

/** ready loads the chat and waits for the model list. */
export async function ready(page, base) {
  await page.goto(base);
  await page.waitForSelector('body[data-ready="true"]');
  await page.waitForSelector('#model-button:not([disabled])');
}

/**
 * seeded sets the conversation's seed, so the test model's random reply is
 * the same every run: a scenario that needs a long reply picks a seed that
 * gives one (unseeded, chat-tiny now and then ends after a few tokens).
 */
export async function seeded(page, seed) {
  await page.click('#settings-button');
  await page.fill('#param-seed', String(seed));
  await page.click('#settings-button');
}

/** send types text into the composer and presses Enter. */
export async function send(page, text) {
  await page.fill('#composer-input', text);
  await page.press('#composer-input', 'Enter');
}

/**
 * ask sends text and waits until the reply it asked for has ended (settled
 * alone may look before the page has started the request).
 */
export async function ask(page, text) {
  await answered(page, () => send(page, text));
}

/** answered runs act, which starts a chat request, and waits until its reply has ended. */
export async function answered(page, act) {
  const res = page.waitForResponse((r) => r.url().endsWith('/v1/chat/completions') && r.request().method() === 'POST');
  await act();
  await res;
  await settled(page);
}

/** lastReply is the last assistant article. */
export function lastReply(page) {
  return page.locator('article.msg-assistant').last();
}

/** settled waits until no reply is streaming. */
export async function settled(page, timeout = 30000) {
  await page.waitForSelector('#send-button:not([hidden])', { timeout });
  await page.waitForSelector('article[aria-busy="true"]', { state: 'detached', timeout });
}

/** dropFiles drops files (paths) onto the conversation, as a drag from the desktop would. */
export async function dropFiles(page, files) {
  const payload = files.map((f) => ({ name: path.basename(f.path), type: f.type, b64: fs.readFileSync(f.path).toString('base64') }));
  const dt = await page.evaluateHandle((list) => {
    const dt = new DataTransfer();
    for (const f of list) {
      const bin = atob(f.b64);
      const bytes = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      dt.items.add(new File([bytes], f.name, { type: f.type }));
    }
    return dt;
  }, payload);
  for (const type of ['dragenter', 'dragover', 'drop']) await page.dispatchEvent('#messages', type, { dataTransfer: dt });
}
