// Stats measures a reply as it streams: time to first token, decode speed
// and token counts (counted from chunks while streaming, then replaced by
// the server's usage when it sends one).

/** Meter follows one reply. Times are milliseconds (performance.now()). */
export class Meter {
  constructor(now) {
    this.t0 = now;
    this.tFirst = null;
    this.tLast = null;
    this.chunks = 0;
    this.usage = null;
  }

  /** token records a chunk that carried text. */
  token(now) {
    if (this.tFirst === null) this.tFirst = now;
    this.tLast = now;
    this.chunks++;
  }

  /** setUsage records the server's usage object. */
  setUsage(u) {
    if (u && typeof u.completion_tokens === 'number') this.usage = u;
  }

  /**
   * snapshot returns {ttftMs, tokensPerSec, completionTokens, promptTokens,
   * totalTokens}; a field is null until it is known.
   */
  snapshot() {
    const n = this.usage ? this.usage.completion_tokens : this.chunks;
    const ttftMs = this.tFirst === null ? null : this.tFirst - this.t0;
    let tokensPerSec = null;
    if (this.tFirst !== null && this.tLast > this.tFirst && n > 1) tokensPerSec = ((n - 1) * 1000) / (this.tLast - this.tFirst);
    const promptTokens = this.usage && typeof this.usage.prompt_tokens === 'number' ? this.usage.prompt_tokens : null;
    return {
      ttftMs,
      tokensPerSec,
      completionTokens: n,
      promptTokens,
      totalTokens: promptTokens === null ? null : promptTokens + n,
    };
  }
}

/** format returns a one-line summary of a snapshot, with the model's context length if known. */
export function format(s, contextLength) {
  if (!s) return '';
  const parts = [];
  if (s.tokensPerSec !== null && s.tokensPerSec !== undefined) parts.push(`${s.tokensPerSec.toFixed(1)} tok/s`);
  if (s.ttftMs !== null && s.ttftMs !== undefined) parts.push(`first token ${Math.round(s.ttftMs)} ms`);
  if (s.completionTokens) parts.push(`${s.completionTokens} tokens`);
  if (s.totalTokens !== null && s.totalTokens !== undefined) {
    parts.push(contextLength ? `${s.totalTokens} / ${contextLength} context` : `${s.totalTokens} in context`);
  }
  return parts.join(' · ');
}
