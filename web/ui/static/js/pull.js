// Pull turns /api/pull's progress lines into what the model panel shows:
// bytes done of the total, the speed over the last few seconds, the time
// left, and one plain sentence when the hub cannot be reached.

import { humanBytes } from './attach.js';

/** WINDOW is how far back the speed looks (ms). */
const WINDOW = 5000;

/** Rate follows one pull's bytes over time. Times are milliseconds. */
export class Rate {
  constructor() {
    this.samples = []; // [time, completed], oldest first
  }

  /** add records that completed bytes were present at now. */
  add(now, completed) {
    const s = this.samples;
    if (s.length && completed < s[s.length - 1][1]) s.length = 0; // a restart: begin again
    s.push([now, completed]);
    while (s.length > 2 && now - s[1][0] >= WINDOW) s.shift();
  }

  /** speed returns bytes per second over the window, or null until half a second has passed. */
  speed() {
    const s = this.samples;
    if (s.length < 2) return null;
    const [t0, b0] = s[0];
    const [t1, b1] = s[s.length - 1];
    if (t1 - t0 < 500) return null;
    return ((b1 - b0) * 1000) / (t1 - t0);
  }
}

/** clock prints seconds as m:ss, or h:mm:ss from an hour up (as hearth pull does). */
export function clock(seconds) {
  const s = Math.max(0, Math.round(seconds));
  const two = (n) => String(n).padStart(2, '0');
  if (s >= 3600) return `${Math.floor(s / 3600)}:${two(Math.floor(s / 60) % 60)}:${two(s % 60)}`;
  return `${Math.floor(s / 60)}:${two(s % 60)}`;
}

/**
 * progressText returns the line under a pull's progress bar for a progress
 * report p ({status, completed, total}) and the speed in bytes per second
 * (or null): "48.1 kB of 110 kB · 2.1 MB/s · 0:03 left".
 */
export function progressText(p, speed) {
  if (!p || p.status === 'resolving') return 'Finding the files…';
  const total = Number(p.total) || 0;
  const done = Number(p.completed) || 0;
  if (p.status === 'done') return `Checking and linking ${humanBytes(total)}…`;
  const parts = [total ? `${humanBytes(done)} of ${humanBytes(total)}` : humanBytes(done)];
  if (speed !== null && speed !== undefined && speed >= 0) {
    parts.push(`${humanBytes(speed)}/s`);
    if (speed > 0 && total > done) parts.push(`${clock((total - done) / speed)} left`);
  }
  return parts.join(' · ');
}

/** OFFLINE is what the panel says when the hub cannot be reached. */
export const OFFLINE = 'Hearth cannot reach the model hub, so nothing can be downloaded now: check this computer’s internet connection and try again.';

/**
 * hubOffline reports whether a pull's error means the hub could not be
 * reached at all (no network, no DNS, a refused connection), as opposed to
 * the hub answering with a refusal.
 */
export function hubOffline(message) {
  return /reach the hub|cannot reach|can't reach|unreachable|offline|dial tcp|no such host|connection refused|network is unreachable|no route to host|i\/o timeout|TLS handshake timeout/i.test(String(message || ''));
}
