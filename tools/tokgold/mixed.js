// mixed.js generates the deterministic mixed text the goldens and benchmarks
// use; engine/tokenizer/mixed_test.go implements the same generator.
'use strict'

// mixedText joins fragments and separators chosen by a xorshift32 generator
// until the text reaches nbytes bytes of UTF-8.
function mixedText(corpus, seed, nbytes) {
  let x = seed >>> 0
  const next = () => {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    x >>>= 0
    return x
  }
  const parts = []
  let n = 0
  while (n < nbytes) {
    const f = corpus.fragments[next() % corpus.fragments.length]
    const s = corpus.separators[next() % corpus.separators.length]
    parts.push(f, s)
    n += Buffer.byteLength(f) + Buffer.byteLength(s)
  }
  return parts.join('')
}

module.exports = { mixedText }
