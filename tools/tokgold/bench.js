// bench.js times the reference (tokenizers@0.23.2, Rust through Node) on
// what engine/tokenizer's benchmarks time: encoding 1 MB of mixed text
// (BenchmarkEncode1MB) and loading tokenizer.json (BenchmarkLoad*). It
// prints the fastest wall time and the median CPU time of runs tries.
// Run: node bench.js [runs]
'use strict'
const fs = require('fs')
const path = require('path')
const { Tokenizer } = require('tokenizers')
const { mixedText } = require('./mixed')
const { names, cacheDir, tokdir } = require('./common')
const synthetic = require('./synthetic')

const benchSeed = 2 // bench_test.go's benchSeed and benchBytes
const benchBytes = 1 << 20

const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6
// cpuMs is the CPU time (user and system, all threads) since c0, as
// engine/tokenizer's benchmarks report it (cpu-ms/op).
const cpuMs = (c0) => {
  const c = process.cpuUsage(c0)
  return (c.user + c.system) / 1000
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

async function main() {
  const runs = Number(process.argv[2] || 5)
  const corpus = JSON.parse(fs.readFileSync(path.join(tokdir, 'corpus.json'), 'utf8'))
  const text = mixedText(corpus, benchSeed, benchBytes)
  const dirs = names.map((n) => [n, cacheDir(n)])
  for (const n of ['syn_gpt2', 'syn_norm', 'syn_metaspace', 'syn_unk', 'syn_suffix']) dirs.push([n, synthetic.syntheticDir(n)])
  console.log(`tokenizers@${require('tokenizers/package.json').version}, node ${process.version}, ${Buffer.byteLength(text)} bytes, ${runs} runs`)
  console.log('name\tload_ms\tload_cpu_ms\tencode_ms(min)\tencode_cpu_ms\tids')
  for (const [name, dir] of dirs) {
    const file = path.join(dir, 'tokenizer.json')
    if (!fs.existsSync(file)) continue
    const loads = []
    const loadCPU = []
    let tok
    for (let i = 0; i < Math.min(runs, 3); i++) {
      const t0 = process.hrtime.bigint()
      const c0 = process.cpuUsage()
      tok = Tokenizer.fromFile(file)
      loads.push(ms(t0))
      loadCPU.push(cpuMs(c0))
    }
    await tok.encode(text.slice(0, 10000), null, { addSpecialTokens: false }) // warm up
    const encs = []
    const encCPU = []
    let n = 0
    for (let i = 0; i < runs; i++) {
      const t0 = process.hrtime.bigint()
      const c0 = process.cpuUsage()
      const e = await tok.encode(text, null, { addSpecialTokens: false })
      encs.push(ms(t0))
      encCPU.push(cpuMs(c0))
      n = e.getIds().length
    }
    const min = (xs) => Math.min(...xs)
    console.log(`${name}\t${min(loads).toFixed(0)}\t${median(loadCPU).toFixed(0)}\t${min(encs).toFixed(1)}\t${median(encCPU).toFixed(1)}\t${n}`)
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
