// Scenarios about the page itself: Markdown and thinking in the real DOM,
// copy buttons, settings per conversation, keyboard and focus order,
// accessible names, a narrow window, and dark mode.

import assert from 'node:assert/strict';
import { answered, ready, send } from './browser.js';

async function render({ page, env }) {
  await ready(page, env.base);
  const got = await page.evaluate(async () => {
    const { View } = await import('./js/view.js');
    const el = document.createElement('section');
    document.body.append(el);
    const text = [
      '<think>Weighing **options**.</think>',
      '# Title',
      '',
      'Some *emphasis*, `code`, a [link](https://example.com) and <img src=x onerror="window.pwned=1">.',
      '',
      '| a | b |',
      '|---|--:|',
      '| 1 | 2 |',
      '',
      '```python',
      'def f(x):  # square',
      '    return x ** 2',
      '```',
      '',
      '[bad](javascript:alert(1))',
    ].join('\n');
    new View(el, { contextLength: () => 0, onEdit() {}, onRegenerate() {} }).render({ messages: [{ id: 'a', role: 'assistant', text, model: 'm' }] });
    const q = (s) => el.querySelector(s);
    const out = {
      thinkingOpen: q('details.thinking').open,
      thinkingText: q('details.thinking .think-body').textContent.trim(),
      h1: q('.msg-body h1').textContent,
      em: q('.msg-body em').textContent,
      img: el.querySelectorAll('img').length,
      scriptish: el.querySelectorAll('[onerror]').length,
      th: [...el.querySelectorAll('th')].map((t) => t.textContent),
      right: q('td.align-right') !== null,
      kw: [...el.querySelectorAll('pre .tok-kw')].map((t) => t.textContent),
      com: q('pre .tok-com').textContent,
      links: [...el.querySelectorAll('a[href]')].map((a) => a.getAttribute('href')),
      rel: q('a[href]').rel,
      visibleText: q('.msg-body').innerText,
    };
    el.id = 'render-test';
    return out;
  });
  assert.equal(got.thinkingOpen, false, 'a finished thinking section starts collapsed');
  assert.equal(got.thinkingText, 'Weighing options.');
  assert.equal(got.h1, 'Title');
  assert.equal(got.em, 'emphasis');
  assert.equal(got.img, 0, 'raw HTML became an element');
  assert.equal(got.scriptish, 0);
  assert.match(got.visibleText, /<img src=x onerror="window.pwned=1">/, 'raw HTML is shown as text');
  assert.deepEqual(got.th, ['a', 'b']);
  assert.ok(got.right, 'column alignment');
  assert.deepEqual(got.kw, ['def', 'return']);
  assert.equal(got.com, '# square');
  assert.deepEqual(got.links, ['https://example.com'], 'only the safe link is a link');
  assert.equal(got.rel, 'noopener noreferrer');
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  // The code block's copy button puts the code on the clipboard.
  await page.locator('#render-test .codeblock button.copy').click();
  await page.locator('#render-test .codeblock button.copy', { hasText: 'Copied' }).waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), 'def f(x):  # square\n    return x ** 2');
  return got;
}

async function settings({ page, w, env }) {
  await ready(page, env.base);
  await page.click('#settings-button');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'system-prompt');
  await page.fill('#system-prompt', 'You are terse.');
  await page.fill('#param-temperature', '0.3');
  await page.fill('#param-max_tokens', '12');
  await page.fill('#param-seed', '7');
  await answered(page, () => send(page, 'Hi'));
  const b = w.chats[0].body;
  assert.deepEqual(b.messages[0], { role: 'system', content: 'You are terse.' });
  assert.equal(b.temperature, 0.3);
  assert.equal(b.max_tokens, 12);
  assert.equal(b.seed, 7);
  assert.equal(b.top_p, undefined, 'an empty setting is left to the server');
  // A new conversation starts with empty settings; the old one keeps its own.
  await page.click('#new-chat');
  assert.equal(await page.inputValue('#system-prompt'), '');
  await page.locator('#conv-list .conv-open', { hasText: 'Hi' }).click();
  assert.equal(await page.inputValue('#system-prompt'), 'You are terse.');
  assert.equal(await page.inputValue('#param-temperature'), '0.3');
  return { body: { temperature: b.temperature, max_tokens: b.max_tokens, seed: b.seed } };
}

async function keyboard({ page, w, env }) {
  await ready(page, env.base);
  assert.equal(await page.evaluate(() => document.activeElement.id), 'composer-input', 'the message box has focus on load');
  await page.keyboard.type('line one');
  await page.keyboard.press('Shift+Enter');
  await page.keyboard.type('line two');
  assert.equal(await page.inputValue('#composer-input'), 'line one\nline two');
  assert.equal(w.chats.length, 0, 'Shift+Enter sent the message');
  // (answered waits for the request: settled alone may look before the
  // page has started it)
  await answered(page, () => page.keyboard.press('Enter'));
  assert.equal(w.chats[0].body.messages[0].content, 'line one\nline two');
  // Focus order follows the layout: sidebar, top bar, messages, composer.
  await page.evaluate(() => document.activeElement.blur());
  await page.focus('body');
  const order = [];
  for (let k = 0; k < 40 && order.at(-1) !== 'composer-input'; k++) {
    await page.keyboard.press('Tab');
    order.push(await page.evaluate(() => {
      const a = document.activeElement;
      return a.id || a.className || a.tagName;
    }));
  }
  const at = (id) => order.indexOf(id);
  for (const id of ['new-chat', 'export-json', 'model-button', 'settings-button', 'attach-button', 'composer-input']) assert.ok(at(id) >= 0, `${id} is not in the tab order: ${order}`);
  assert.ok(at('new-chat') < at('model-button') && at('model-button') < at('settings-button') && at('settings-button') < at('attach-button') && at('attach-button') < at('composer-input'), `focus order: ${order}`);
  // Every control has an accessible name.
  const unnamed = await page.evaluate(() => {
    const name = (e) => {
      if (e.getAttribute('aria-label')) return e.getAttribute('aria-label');
      const by = e.getAttribute('aria-labelledby');
      if (by) return by.split(' ').map((id) => (document.getElementById(id) || {}).textContent || '').join(' ');
      if (e.labels && e.labels.length) return e.labels[0].textContent;
      return e.textContent.trim() || e.title;
    };
    return [...document.querySelectorAll('button, input, textarea, select, [role=listbox], audio')]
      .filter((e) => !(e.type === 'file') && !e.closest('[hidden]'))
      .filter((e) => !String(name(e)).trim())
      .map((e) => e.outerHTML.slice(0, 80));
  });
  assert.deepEqual(unnamed, []);
  return { order };
}

async function narrow({ page, env }) {
  await page.setViewportSize({ width: 380, height: 740 });
  await ready(page, env.base);
  await answered(page, () => send(page, 'A message in a narrow window, long enough to wrap over several lines of the screen.'));
  assert.equal(await page.isVisible('#sidebar'), false, 'the sidebar covers a narrow window');
  assert.equal(await page.isVisible('#toggle-sidebar'), true);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page scrolls sideways by ${overflow}px`);
  await page.click('#toggle-sidebar');
  await page.waitForSelector('#sidebar', { state: 'visible' });
  assert.equal(await page.getAttribute('#toggle-sidebar', 'aria-expanded'), 'true');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'new-chat');
  await page.keyboard.press('Escape');
  await page.waitForSelector('#sidebar', { state: 'hidden' });
  await page.screenshot({ path: `${env.out}/narrow.png` });
  return { overflow };
}

async function dark({ page, env }) {
  const lum = () =>
    page.evaluate(() => {
      const m = getComputedStyle(document.body).backgroundColor.match(/\d+/g).map(Number);
      return (0.2126 * m[0] + 0.7152 * m[1] + 0.0722 * m[2]) / 255;
    });
  await page.emulateMedia({ colorScheme: 'light' });
  await ready(page, env.base);
  const light = await lum();
  await page.emulateMedia({ colorScheme: 'dark' });
  const darkL = await lum();
  assert.ok(light > 0.9 && darkL < 0.2, `background luminance light ${light}, dark ${darkL}`);
  await page.screenshot({ path: `${env.out}/dark.png` });
  return { light, dark: darkL };
}

export const uiScenarios = { render, settings, keyboard, narrow, dark };
