import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BACKOFF, HEARTBEAT, Health } from '../../static/js/health.js';

// fakeTimers runs timeouts by hand: fire() runs the pending one.
function fakeTimers() {
  const t = { pending: null, delays: [] };
  t.setTimeout = (fn, ms) => {
    t.pending = fn;
    t.delays.push(ms);
    return t.delays.length;
  };
  t.clearTimeout = () => {
    t.pending = null;
  };
  t.fire = async () => {
    const fn = t.pending;
    t.pending = null;
    await fn();
  };
  return t;
}

test('down, backoff while down, up once the server answers', async () => {
  const timers = fakeTimers();
  const answers = [false, false, false, true];
  const log = [];
  const hl = new Health({ check: async () => answers.shift(), onDown: () => log.push('down'), onUp: () => log.push('up'), timers });
  hl.start();
  assert.deepEqual(timers.delays, [HEARTBEAT]);
  await timers.fire(); // the heartbeat fails: down
  assert.equal(hl.down, true);
  hl.lost(); // a second failed request changes nothing
  assert.deepEqual(log, ['down']);
  await timers.fire();
  await timers.fire();
  await timers.fire(); // answers: up
  assert.deepEqual(log, ['down', 'up']);
  assert.equal(hl.down, false);
  assert.deepEqual(timers.delays, [HEARTBEAT, BACKOFF[0], BACKOFF[1], BACKOFF[2], HEARTBEAT]);
});

test('backoff stops growing at its last step', () => {
  const hl = new Health({ check: async () => false, onDown() {}, onUp() {}, timers: fakeTimers() });
  const got = [];
  for (hl.tries = 0; hl.tries < 8; hl.tries++) got.push(hl.nextDelay());
  assert.deepEqual(got, [1000, 2000, 4000, 8000, 10000, 10000, 10000, 10000]);
});

test('no heartbeat in a hidden tab; ok() after a failure brings the page back', async () => {
  const timers = fakeTimers();
  let asked = 0;
  const log = [];
  const hl = new Health({ check: async () => (asked++, true), onDown: () => log.push('down'), onUp: () => log.push('up'), visible: () => false, timers });
  hl.start();
  await timers.fire();
  assert.equal(asked, 0, 'a hidden tab asked the server');
  hl.lost();
  hl.ok();
  assert.deepEqual(log, ['down', 'up']);
});
