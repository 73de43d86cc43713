import assert from 'node:assert/strict';
import { test } from 'node:test';
import { firstRun, fitsHere, localID, paramsText } from '../../static/js/panel.js';
import { Rate, clock, hubOffline, progressText } from '../../static/js/pull.js';

test('rate over a window, and the text under the bar', () => {
  const r = new Rate();
  r.add(0, 0);
  assert.equal(r.speed(), null);
  r.add(400, 400e3);
  assert.equal(r.speed(), null, 'no speed before half a second');
  r.add(1000, 1e6);
  assert.equal(r.speed(), 1e6);
  assert.equal(progressText({ status: 'downloading', completed: 1e6, total: 31e6 }, r.speed()), '1.0 MB of 31 MB · 1.0 MB/s · 0:30 left');
  assert.equal(progressText({ status: 'downloading', completed: 5e5, total: 2e9 }, null), '500 kB of 2.0 GB');
  assert.equal(progressText({ status: 'downloading', completed: 5e5, total: 2e9 }, 0), '500 kB of 2.0 GB · 0 B/s');
  assert.equal(progressText({ status: 'resolving' }, null), 'Finding the files…');
  assert.equal(progressText({ status: 'done', completed: 2e9, total: 2e9 }, 5), 'Checking and linking 2.0 GB…');
  r.add(1500, 10); // a new attempt started over
  assert.equal(r.speed(), null);
});

test('clock', () => {
  assert.equal(clock(0), '0:00');
  assert.equal(clock(83.4), '1:23');
  assert.equal(clock(3 * 3600 + 62), '3:01:02');
});

test('hubOffline tells a hub that cannot be reached from a refusal', () => {
  const offline = [
    'pull a/b: reach the hub: Get "https://huggingface.co/api/models/a/b/revision/main?blobs=true": dial tcp: lookup huggingface.co: no such host',
    'pull a/b: reach the hub: Get "http://127.0.0.1:9/api/models/a/b/revision/main": dial tcp 127.0.0.1:9: connect: connection refused',
    'cannot reach huggingface.co (offline?)',
  ];
  const refused = ['pull a/b: not found: the hub has no repo a/b', 'Access to model a/b is restricted.', 'pull a/b: the hub answered 500 Internal Server Error for main'];
  for (const m of offline) assert.equal(hubOffline(m), true, m);
  for (const m of refused) assert.equal(hubOffline(m), false, m);
});

test('first run, fit filter, parameters, local ids', () => {
  assert.equal(firstRun([{ id: 'hearth/starter' }]), true);
  assert.equal(firstRun([{ id: 'hearth/starter' }, { id: '/models/x', default: true }]), true);
  assert.equal(firstRun([{ id: 'hearth/starter', default: true }, { id: 'mlx-community/Qwen3-4B-4bit' }]), false);
  assert.equal(fitsHere({ fit: { status: 'fits' } }), true);
  assert.equal(fitsHere({ fit: { status: 'tight' } }), true);
  assert.equal(fitsHere({ fit: { status: "won't fit" } }), false);
  assert.equal(fitsHere({}), true);
  assert.equal(paramsText(3.21e9), '3.2B');
  assert.equal(paramsText(7e9), '7B');
  assert.equal(paramsText(14.8e9), '15B');
  assert.equal(paramsText(6e8), '600M');
  assert.equal(paramsText(undefined), '');
  const e = { name: 'llama3.2', names: ['llama3.2', 'llama3.2:3b'], repo: 'mlx-community/Llama-3.2-3B-Instruct-4bit' };
  assert.equal(localID(e, [{ id: 'hearth/starter' }, { id: 'mlx-community/Llama-3.2-3B-Instruct-4bit' }]), 'mlx-community/Llama-3.2-3B-Instruct-4bit');
  assert.equal(localID(e, [{ id: 'hearth/starter' }]), '');
});
