// Health follows whether the Hearth server answers. While it does, a
// heartbeat asks GET /health now and then, so a server that stopped is
// noticed even when nobody sends anything. Once a request gets no answer,
// the page is down: it asks again after 1, 2, 4 and 8 seconds, then every
// 10, until the server is back.

/** BACKOFF is the wait before each try while the server is down (ms); the last one repeats. */
export const BACKOFF = [1000, 2000, 4000, 8000, 10000];

/** HEARTBEAT is the wait between checks while the server answers (ms). */
export const HEARTBEAT = 15000;

export class Health {
  /**
   * @param {{check: () => Promise<boolean>, onDown: () => void, onUp: () => void,
   *          visible?: () => boolean, timers?: {setTimeout, clearTimeout}}} opts
   * check asks the server; onDown and onUp are called once per change;
   * visible says whether the page is shown (no heartbeat in a hidden tab).
   */
  constructor({ check, onDown, onUp, visible = () => true, timers = globalThis }) {
    this.check = check;
    this.onDown = onDown;
    this.onUp = onUp;
    this.visible = visible;
    this.timers = timers;
    this.down = false;
    this.tries = 0; // failed tries since the server went down
    this.timer = 0;
    this.checking = false;
  }

  /** start begins the heartbeat. */
  start() {
    this.schedule(HEARTBEAT);
  }

  /** lost says a request got no answer: the page is down until a check succeeds. */
  lost() {
    if (this.down) return;
    this.down = true;
    this.tries = 0;
    this.onDown();
    this.schedule(BACKOFF[0]);
  }

  /** ok says a request was answered. */
  ok() {
    if (this.down) this.up();
  }

  /** retry checks at once (the "Try now" button). */
  retry() {
    this.run();
  }

  /** nextDelay is the wait before the next try while down (ms). */
  nextDelay() {
    return BACKOFF[Math.min(this.tries, BACKOFF.length - 1)];
  }

  up() {
    this.down = false;
    this.tries = 0;
    this.onUp();
    this.schedule(HEARTBEAT);
  }

  schedule(ms) {
    this.timers.clearTimeout(this.timer);
    this.timer = this.timers.setTimeout(() => this.run(), ms);
  }

  async run() {
    if (this.checking) return;
    if (!this.down && !this.visible()) {
      this.schedule(HEARTBEAT);
      return;
    }
    this.checking = true;
    let ok = false;
    try {
      ok = await this.check();
    } catch {
      ok = false;
    } finally {
      this.checking = false;
    }
    if (ok) {
      if (this.down) this.up();
      else this.schedule(HEARTBEAT);
    } else if (!this.down) {
      this.lost();
    } else {
      this.tries++;
      this.schedule(this.nextDelay());
    }
  }
}
