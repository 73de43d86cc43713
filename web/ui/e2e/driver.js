// Driver runs one browser scenario against a running Hearth server and
// prints what it saw as a last line "RESULT {json}" for browser_test.go,
// which checks the server's side. On failure it saves a screenshot in
// OUT_DIR and exits 1.
//
//   HEARTH_URL=http://127.0.0.1:PORT/ OUT_DIR=dir MODELS='["a","b"]' \
//   IMAGE=x.png AUDIO=y.wav [CONTROL=url VARS='{...}'] node driver.js <scenario>
//
// CONTROL is the test's control server (browser.js control); VARS holds a
// scenario's own inputs.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { launch, watch } from './browser.js';
import { panelScenarios } from './panel_scenarios.js';
import { recoveryScenarios } from './recovery_scenarios.js';
import { scenarios } from './scenarios.js';
import { uiScenarios } from './ui_scenarios.js';

const all = { ...scenarios, ...uiScenarios, ...recoveryScenarios, ...panelScenarios };
const name = process.argv[2];
const base = process.env.HEARTH_URL;
const out = process.env.OUT_DIR || '.';
if (!all[name] || !base) {
  console.error(`usage: HEARTH_URL=... node driver.js <${Object.keys(all).join('|')}>`);
  process.exit(2);
}
const env = {
  base,
  out,
  models: JSON.parse(process.env.MODELS || '[]'),
  image: process.env.IMAGE,
  audio: process.env.AUDIO,
  control: process.env.CONTROL || '',
  vars: JSON.parse(process.env.VARS || '{}') || {},
};

const browser = await launch();
let page;
let code = 0;
try {
  const context = await browser.newContext({ viewport: { width: 1200, height: 800 }, acceptDownloads: true });
  await context.grantPermissions(['clipboard-read', 'clipboard-write', 'microphone'], { origin: new URL(base).origin });
  page = await context.newPage();
  page.setDefaultTimeout(20000);
  const w = watch(page, base);
  const result = (await all[name]({ page, context, w, env })) || {};
  w.check();
  assert.ok(page.url().startsWith(new URL(base).origin), 'the page left the server');
  console.log('RESULT ' + JSON.stringify(result));
} catch (e) {
  code = 1;
  console.error(`scenario ${name} failed: ${e && e.stack ? e.stack : e}`);
  if (page) {
    const shot = path.join(out, `${name}-failure.png`);
    try {
      fs.mkdirSync(out, { recursive: true });
      await page.screenshot({ path: shot, fullPage: true });
      console.error(`screenshot: ${shot}`);
    } catch (err) {
      console.error(`no screenshot: ${err}`);
    }
  }
} finally {
  await browser.close();
}
process.exit(code);
