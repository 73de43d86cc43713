// Scenarios of the model panel, against a server whose hub is a local fake
// (registrytest.Hub, set up by panel_test.go): the catalog filtered to what
// fits and the first-run recommendation (GET /api/catalog), a pull with its
// progress bar, cancelled and resumed, delete (DELETE /api/delete), and a
// hub that cannot be reached.

import assert from 'node:assert/strict';
import { ask, control, lastReply, ready } from './browser.js';
import { OFFLINE } from '../static/js/pull.js';

const fits = (e) => !(e.fit && e.fit.status === "won't fit");
const names = (loc) => loc.evaluateAll((lis) => lis.map((li) => li.dataset.name || li.dataset.id));

async function catalog({ page, env }) {
  await ready(page, env.base);
  const cat = await page.evaluate(async () => {
    const r = await fetch('api/catalog');
    return r.ok ? (await r.json()).models : `GET /api/catalog: ${r.status}`;
  });
  assert.ok(Array.isArray(cat) && cat.length, `the catalog scenario needs GET /api/catalog (got ${JSON.stringify(cat)})`);
  const rec = cat.filter((e) => e.recommended);
  assert.equal(rec.length, 1, 'the catalog recommends one model');
  // A first run: the empty conversation recommends the model that fits best.
  const welcome = page.locator('.messages .welcome');
  await welcome.waitFor();
  assert.ok((await welcome.innerText()).includes(rec[0].name), 'the recommendation is not shown');
  assert.equal(await welcome.getByRole('button', { name: `Pull ${rec[0].name}` }).count(), 1);
  await welcome.getByRole('button', { name: 'Browse models' }).click();
  await page.waitForSelector('#models-panel:not([hidden])');
  assert.equal(await page.getAttribute('#models-button', 'aria-expanded'), 'true');
  await page.locator('#models-panel .recommend', { hasText: rec[0].name }).waitFor();
  // The catalog, in the server's order (best fit first), without what won't fit.
  const rows = page.locator('#catalog-list > li.row');
  await rows.first().waitFor();
  assert.deepEqual(await names(rows), cat.filter(fits).map((e) => e.name));
  const hidden = cat.length - cat.filter(fits).length;
  if (hidden) {
    await page.check('#show-all-models');
    assert.deepEqual(await names(rows), cat.map((e) => e.name));
    await page.uncheck('#show-all-models');
  }
  const first = rows.first();
  assert.match(await first.locator('.badge.fit').getAttribute('title'), /needs .+B; .+B available/);
  // The models on this machine are listed too, the built-in ones without Delete.
  assert.deepEqual((await names(page.locator('#local-models > li.row'))).sort(), [...env.models].sort());
  assert.equal(await page.locator('#local-models').getByRole('button', { name: /^Delete / }).count(), 0);
  // Escape closes the panel and gives focus back to its button.
  await page.locator('#pull-name').focus();
  await page.keyboard.press('Escape');
  await page.waitForSelector('#models-panel', { state: 'hidden' });
  assert.equal(await page.evaluate(() => document.activeElement.id), 'models-button');
  return { entries: cat.length, hidden, recommended: rec[0].name };
}

async function pull({ page, w, env }) {
  const { name, repo } = env.vars;
  await ready(page, env.base);
  const start = async (again) => {
    if (env.vars.catalog && !again) {
      // A first run: the pull starts from the empty conversation.
      await page.locator('.messages .welcome').getByRole('button', { name: `Pull ${name}` }).click();
    } else if (env.vars.catalog) {
      await page.locator('#catalog-list').getByRole('button', { name: `Pull ${name}` }).click();
    } else {
      if (await page.isHidden('#models-panel')) await page.click('#models-button');
      await page.fill('#pull-name', name);
      await page.press('#pull-name', 'Enter');
    }
  };
  await start(false);
  await page.waitForSelector('#models-panel:not([hidden])');
  const status = page.locator('#pull-status');
  // Bytes arrive, then the hub stalls in the middle of the weights.
  await page.waitForFunction(() => {
    const p = document.querySelector('#pull-status progress');
    return p && p.max > 1 && p.value > 0 && p.value < p.max;
  });
  const progress = await status.locator('.pull-text').innerText();
  assert.match(progress, /^[\d.]+ k?B of [\d.]+ k?B/);
  assert.match(await page.locator('#models-button').innerText(), /^Models · \d+%$/);
  // Cancel: the browser drops the request, and the server the download.
  await status.getByRole('button', { name: `Cancel pulling ${name}` }).click();
  await page.locator('#pull-status', { hasText: 'Cancelled the pull' }).waitFor();
  assert.equal(w.failed.filter((f) => f.url.endsWith('/api/pull')).length, 1, 'the browser did not abort the pull');
  assert.equal(await page.locator('#models-button').innerText(), 'Models');
  assert.equal(await page.locator(`#local-models > li[data-id="${repo}"]`).count(), 0, 'a cancelled pull left a model');
  // The hub behaves again: the next pull resumes and finishes.
  await control(env, 'hub/clear');
  await start(true);
  await page.locator('#pull-status', { hasText: `Pulled ${name}.` }).waitFor();
  await page.locator(`#local-models > li[data-id="${repo}"]`).waitFor();
  assert.equal(await page.locator(`#model-list [role=option][data-id="${repo}"]`).count(), 1, 'the picker does not list the pulled model');
  assert.equal(await page.locator('.messages .welcome').count(), 0, 'the first-run recommendation is still shown');
  if (env.vars.catalog) await page.locator(`#catalog-list > li[data-name="${name}"] .badge.downloaded`).waitFor();
  // Use it, and chat with it.
  await status.getByRole('button', { name: `Use ${repo}` }).click();
  assert.equal((await page.locator('#model-button .model-id').innerText()).trim(), repo);
  await ask(page, 'Hello, new model.');
  assert.equal(await lastReply(page).locator('.msg-error').count(), 0, 'the pulled model did not answer');
  assert.equal((await lastReply(page).locator('.msg-role').innerText()).trim(), repo);
  return { progress };
}

async function remove({ page, env }) {
  const { repo } = env.vars;
  await ready(page, env.base);
  await page.click('#models-button');
  const row = page.locator(`#local-models > li[data-id="${repo}"]`);
  await row.waitFor();
  page.once('dialog', (d) => d.accept());
  await row.getByRole('button', { name: `Delete ${repo}` }).click();
  await page.locator('#pull-status', { hasText: `Deleted ${repo}.` }).waitFor();
  await row.waitFor({ state: 'detached' });
  assert.equal(await page.locator(`#model-list [role=option][data-id="${repo}"]`).count(), 0, 'the picker still lists the deleted model');
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  assert.equal(await page.locator(`#model-list [role=option][data-id="${repo}"]`).count(), 0, 'the deleted model came back');
  return {};
}

async function hubOffline({ page, w, env }) {
  // The pull's 502 is expected.
  w.allow(/status of 50\d .*\/api\/pull/);
  await ready(page, env.base);
  await page.click('#models-button');
  await page.fill('#pull-name', 'hearth-test/anything');
  await page.press('#pull-name', 'Enter');
  const st = page.locator('#pull-status.pull-error');
  await st.waitFor();
  const text = (await st.innerText()).trim();
  assert.equal(text, OFFLINE);
  assert.equal(await page.locator('#offline').isHidden(), true, 'an unreachable hub was taken for an unreachable server');
  return { text };
}

export const panelScenarios = { catalog, pull, delete: remove, 'hub-offline': hubOffline };
